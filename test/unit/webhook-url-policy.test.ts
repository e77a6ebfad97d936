import type { LookupAddress } from "node:dns";
import { describe, expect, test } from "vitest";
import { InvalidRequest } from "../../src/errors.js";
import { nonPublicReason } from "../../src/net/address-policy.js";
import { createGuardedLookup, normalizeWebhookUrl } from "../../src/webhooks/url-policy.js";

const policy = { allowHosts: [] };

describe("webhook URLs at creation", () => {
  test.each([
    ["https://hooks.example.com/mailbox", "https://hooks.example.com/mailbox"],
    ["https://Hooks.Example.COM", "https://hooks.example.com/"],
    ["https://hooks.example.com:443/a?b=c", "https://hooks.example.com/a?b=c"],
    ["https://93.184.215.14/hook", "https://93.184.215.14/hook"],
    ["https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/hook", "https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/hook"],
  ])("accepts %s, stored as %s", (raw, normalized) => {
    expect(normalizeWebhookUrl(raw, policy)).toBe(normalized);
  });

  test.each([
    ["http://hooks.example.com/", "https://"],
    ["https://hooks.example.com:8443/", "port 443"],
    ["https://user:pw@hooks.example.com/", "credentials"],
    ["https://@hooks.example.com/", "credentials"],
    ["https://hooks.example.com/#", "fragment"],
    ["https://hooks.example.com/a#frag", "fragment"],
    ["https://localhost/", "not a public host name"],
    ["https://api.localhost/", "not a public host name"],
    ["https://printer.local/", "not a public host name"],
    ["https://intranet/", "not a public host name"],
    ["https://127.0.0.1/", "loopback"],
    ["https://0x7f.1/", "loopback"], // the URL parser canonicalises it to 127.0.0.1
    ["https://2130706433/", "loopback"],
    ["https://10.1.2.3/", "private"],
    ["https://172.16.0.1/", "private"],
    ["https://192.168.1.1/", "private"],
    ["https://100.64.0.1/", "carrier-grade NAT"],
    ["https://169.254.169.254/latest/meta-data/", "link-local"],
    ["https://168.63.129.16/", "cloud metadata"],
    ["https://224.0.0.1/", "multicast"],
    ["https://0.0.0.0/", "this-network"],
    ["https://[::1]/", "loopback"],
    ["https://[::ffff:127.0.0.1]/", "IPv4-mapped"],
    ["https://[::ffff:8.8.8.8]/", "IPv4-mapped"],
    ["https://[64:ff9b::808:808]/", "NAT64"],
    ["https://[2002:7f00:1::]/", "6to4"],
    ["https://[fe80::1]/", "link-local"],
    ["https://[fd00:ec2::254]/", "unique local"],
    ["https://[ff02::1]/", "multicast"],
    [`https://hooks.example.com/${"a".repeat(2048)}`, "2048"],
    [`https://hooks.example.com/${"é".repeat(400)}`, "2048"], // percent-encoding makes it longer than given
    ["not a url", "not a valid URL"],
  ])("refuses %s (%s)", (raw, why) => {
    expect(() => normalizeWebhookUrl(raw, policy)).toThrow(InvalidRequest);
    expect(() => normalizeWebhookUrl(raw, policy)).toThrow(why);
  });

  test("lets WEBHOOK_ALLOW_HOSTS exempt a named host or address from the address check, and nothing else", () => {
    const allow = { allowHosts: ["127.0.44.7", "receiver.localhost"] };
    expect(normalizeWebhookUrl("https://127.0.44.7/h", allow)).toBe("https://127.0.44.7/h");
    expect(normalizeWebhookUrl("https://receiver.localhost/h", allow)).toBe("https://receiver.localhost/h");
    expect(() => normalizeWebhookUrl("https://127.0.44.8/h", allow)).toThrow("loopback");
    expect(() => normalizeWebhookUrl("https://127.0.44.7:8443/h", allow)).toThrow("port 443");
  });
});

describe("addresses", () => {
  test.each(["8.8.8.8", "1.1.1.1", "93.184.215.14", "2606:4700:4700::1111"])("%s is public", (address) => {
    expect(nonPublicReason(address)).toBeUndefined();
  });
});

describe("the connection-time lookup", () => {
  const resolveTo = (...addresses: string[]) => async (): Promise<LookupAddress[]> =>
    addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  const lookup = (resolve: () => Promise<LookupAddress[]>, options: { all?: boolean; family?: number } = {}, allowHosts: string[] = []) =>
    new Promise<{ err: Error | null; address: unknown }>((done) =>
      createGuardedLookup({ allowHosts }, resolve)("hooks.example.com", options, (err, address) => done({ err, address })),
    );

  test("passes every address of a public name to the connection", async () => {
    const { err, address } = await lookup(resolveTo("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"), { all: true });
    expect(err).toBeNull();
    expect(address).toEqual([
      { address: "93.184.215.14", family: 4 },
      { address: "2606:2800:21f:cb07:6820:80da:af6b:8b2c", family: 6 },
    ]);
  });

  test("refuses a name that resolves (or rebinds) to a private address, even next to a public one", async () => {
    const { err } = await lookup(resolveTo("93.184.215.14", "10.0.0.5"), { all: true });
    expect(err?.message).toBe("hooks.example.com resolves to 10.0.0.5, which is not a public address (private)");
  });

  test("refuses a name that resolves to the metadata address", async () => {
    const { err } = await lookup(resolveTo("169.254.169.254"));
    expect(err?.message).toContain("169.254.169.254");
  });

  test("answers one address of the asked family when the connection wants one", async () => {
    const { err, address } = await lookup(resolveTo("2606:4700:4700::1111", "1.1.1.1"), { family: 4 });
    expect(err).toBeNull();
    expect(address).toBe("1.1.1.1");
  });

  test("does not check a host listed in WEBHOOK_ALLOW_HOSTS", async () => {
    const { err, address } = await lookup(resolveTo("127.0.0.1"), {}, ["hooks.example.com"]);
    expect(err).toBeNull();
    expect(address).toBe("127.0.0.1");
  });
});
