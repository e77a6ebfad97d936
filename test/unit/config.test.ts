import { describe, expect, test } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

describe("configuration", () => {
  test("has embedded defaults when nothing is set", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ httpPort: 8080, smtpPort: 2525, databaseUrl: undefined, temporalAddress: undefined, temporalNamespace: "default" });
    expect(Object.isFrozen(config)).toBe(true);
  });

  test("names every bad value in one clear error", () => {
    expect(() => loadConfig({ HTTP_PORT: "eighty", MANAGED_DOMAIN: "Not A Domain", TEMPORAL_ADDRESS: "nohost" })).toThrow(ConfigError);
    try {
      loadConfig({ HTTP_PORT: "eighty", MANAGED_DOMAIN: "Not A Domain", TEMPORAL_ADDRESS: "nohost" });
    } catch (e) {
      expect((e as Error).message).toContain("HTTP_PORT");
      expect((e as Error).message).toContain("MANAGED_DOMAIN");
      expect((e as Error).message).toContain("TEMPORAL_ADDRESS");
    }
  });

  test("never echoes a database password in an error", () => {
    expect(() => loadConfig({ DATABASE_URL: "mysql://user:hunter2@db/x" })).toThrow(/DATABASE_URL/);
    expect(() => loadConfig({ DATABASE_URL: "mysql://user:hunter2@db/x" })).not.toThrow(/hunter2/);
  });

  test("FEEDBACK_LOOP_SENDERS lists domains and addresses, lower-cased, and refuses a public suffix or anything else", () => {
    // Yahoo's and Microsoft's loops by default; a list replaces them.
    expect(loadConfig({}).feedbackLoopSenders).toEqual(["arf.mail.yahoo.com", "staff@hotmail.com"]);
    expect(loadConfig({ FEEDBACK_LOOP_SENDERS: " ARF.mail.yahoo.com , staff@Hotmail.com,," }).feedbackLoopSenders).toEqual(["arf.mail.yahoo.com", "staff@hotmail.com"]);
    for (const bad of ["co.uk", "com", "github.io", "https://loop.example/", "@example.com", "a b.example"]) {
      expect(() => loadConfig({ FEEDBACK_LOOP_SENDERS: bad }), bad).toThrow(/FEEDBACK_LOOP_SENDERS must list domains or addresses/);
    }
  });

  test("DELIVERY_ALLOW_HOSTS is a comma list of host names and addresses, unset by default", () => {
    expect(loadConfig({}).delivery.allowHosts).toEqual([]);
    expect(loadConfig({ DELIVERY_ALLOW_HOSTS: " MX.Sink.Test ,127.0.0.1,::1" }).delivery.allowHosts).toEqual(["mx.sink.test", "127.0.0.1", "::1"]);
    expect(() => loadConfig({ DELIVERY_ALLOW_HOSTS: "smtp://x" })).toThrow(/DELIVERY_ALLOW_HOSTS must list host names or IP addresses/);
  });

  test("STATUS_PORT is unset by default, 0 for a free port; METRICS_TOKEN is refused when short without echoing it", () => {
    expect(loadConfig({}).statusPort).toBeUndefined();
    expect(loadConfig({ STATUS_PORT: "0" }).statusPort).toBe(0);
    expect(loadConfig({ STATUS_PORT: "9090" }).statusPort).toBe(9090);
    expect(() => loadConfig({ STATUS_PORT: "70000" })).toThrow(/STATUS_PORT must be an integer from 0 to 65535/);
    expect(loadConfig({ METRICS_TOKEN: "0123456789abcdef" }).metricsToken).toBe("0123456789abcdef");
    expect(() => loadConfig({ METRICS_TOKEN: "short-secret" })).toThrow(/METRICS_TOKEN must be at least 16/);
    expect(() => loadConfig({ METRICS_TOKEN: "short-secret" })).not.toThrow(/short-secret/);
  });
  test("SMTP_PROXY_PROTOCOL needs SMTP_PROXY_TRUSTED, a list of addresses and CIDR ranges, and the other way round", () => {
    expect(loadConfig({}).smtp.proxyTrusted).toBeUndefined();
    expect(loadConfig({ SMTP_PROXY_PROTOCOL: "true", SMTP_PROXY_TRUSTED: " 10.0.0.0/8, 192.0.2.7 ,2001:DB8::/32" }).smtp.proxyTrusted).toEqual([
      { network: "10.0.0.0", prefix: 8 },
      { network: "192.0.2.7", prefix: 32 },
      { network: "2001:db8::", prefix: 32 },
    ]);
    expect(() => loadConfig({ SMTP_PROXY_PROTOCOL: "true" })).toThrow(/SMTP_PROXY_PROTOCOL=true and SMTP_PROXY_TRUSTED .* go together/);
    expect(() => loadConfig({ SMTP_PROXY_TRUSTED: "10.0.0.0/8" })).toThrow(/go together/);
    for (const bad of ["10.0.0.0/33", "lb.internal", "10.0.0.0/8/1", "::1/129", "10.0.0.0/"]) {
      expect(() => loadConfig({ SMTP_PROXY_PROTOCOL: "true", SMTP_PROXY_TRUSTED: bad }), bad).toThrow(/SMTP_PROXY_TRUSTED must list IP addresses or CIDR ranges/);
    }
  });

  test("SCAN_ERROR_RETRY_INITIAL_MS spaces the retries of a scanner error from 2 s by default, within 10 ms and 1 min", () => {
    expect(loadConfig({}).scanning.errorRetryInitialMs).toBe(2000);
    expect(loadConfig({ SCAN_ERROR_RETRY_INITIAL_MS: "100" }).scanning.errorRetryInitialMs).toBe(100);
    for (const bad of ["5", "60001", "soon"]) expect(() => loadConfig({ SCAN_ERROR_RETRY_INITIAL_MS: bad }), bad).toThrow(/SCAN_ERROR_RETRY_INITIAL_MS/);
  });

  test("API_MAX_CONNECTIONS_PER_PEER is 100 by default", () => {
    expect(loadConfig({}).api.maxConnectionsPerPeer).toBe(100);
    expect(loadConfig({ API_MAX_CONNECTIONS_PER_PEER: "5" }).api.maxConnectionsPerPeer).toBe(5);
    expect(() => loadConfig({ API_MAX_CONNECTIONS_PER_PEER: "0" })).toThrow(/API_MAX_CONNECTIONS_PER_PEER must be an integer from 1 to 1000000/);
  });
});
