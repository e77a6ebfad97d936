import { describe, expect, test } from "vitest";
import { normalizeIp, peerKey } from "../../src/auth/peer-address.js";

describe("the address failed authentications are counted by", () => {
  test.each([
    ["an IPv4 address", "198.51.100.7", "198.51.100.7"],
    ["an IPv4 peer on a dual-stack socket", "::ffff:198.51.100.7", "198.51.100.7"],
    ["an IPv6 address, as its /64", "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"],
    ["a compressed IPv6 address", "2001:db8::1", "2001:db8:0:0::/64"],
    ["leading zeros and upper case", "2001:0DB8:0001:0002::ffff", "2001:db8:1:2::/64"],
    ["the loopback", "::1", "0:0:0:0::/64"],
    ["an IPv4 tail in IPv6", "64:ff9b::198.51.100.7", "64:ff9b:0:0::/64"],
    ["a scoped link-local address", "fe80::1%eth0", "fe80:0:0:0::/64"],
    ["an unknown peer", undefined, ""],
  ])("%s", (_what, address, key) => {
    expect(peerKey(address)).toBe(key);
  });

  test("allowedIps compare an IPv4-mapped peer as plain IPv4", () => {
    expect(normalizeIp("::ffff:127.0.0.1")).toBe("127.0.0.1");
    expect(normalizeIp("::1")).toBe("::1");
  });
});
