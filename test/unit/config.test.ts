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
});
