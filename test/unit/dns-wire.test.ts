// The DNS wire codec, checked against another implementation (dns2's Packet) and against malformed messages.
import dns2 from "dns2";
import { describe, expect, test } from "vitest";
import { decodeMessage, DnsWireError, EDNS_UDP_PAYLOAD, encodeQuery } from "../../src/dns/wire.js";

const { Packet } = dns2;

function response(answers: object[], authorities: object[] = [], rcode = 0): Buffer {
  const p = new Packet();
  p.header = new Packet.Header({ id: 4242, qr: 1, rd: 1, ra: 1, rcode });
  p.questions = [{ name: "example.com", type: Packet.TYPE.MX, class: Packet.CLASS.IN } as never];
  p.answers = answers.map((a) => ({ class: Packet.CLASS.IN, ttl: 300, ...a })) as never;
  p.authorities = authorities as never;
  return p.toBuffer();
}

describe("encodeQuery", () => {
  test("writes one recursive question with an EDNS OPT record that dns2 reads back", () => {
    const parsed = Packet.parse(encodeQuery(513, "Mail.Example.com", "TXT"));
    expect(parsed.header).toMatchObject({ id: 513, qr: 0, rd: 1, qdcount: 1, arcount: 1 });
    expect(parsed.questions[0]).toMatchObject({ name: "Mail.Example.com", type: Packet.TYPE.TXT, class: Packet.CLASS.IN });
    expect(parsed.additionals[0]).toMatchObject({ type: Packet.TYPE.EDNS, class: EDNS_UDP_PAYLOAD });
  });

  test("refuses a label longer than 63 octets (RFC 1035 §2.3.4)", () => {
    expect(() => encodeQuery(1, `${"a".repeat(64)}.com`, "A")).toThrow(DnsWireError);
  });
});

describe("decodeMessage", () => {
  test("reads A, AAAA, MX, multi-string TXT and CNAME records through dns2's name compression", () => {
    const m = decodeMessage(
      response([
        { name: "example.com", type: Packet.TYPE.A, address: "192.0.2.7" },
        { name: "example.com", type: Packet.TYPE.AAAA, address: "2001:db8::1" },
        { name: "example.com", type: Packet.TYPE.MX, priority: 10, exchange: "MX1.Example.com", ttl: 60 },
        { name: "example.com", type: Packet.TYPE.TXT, data: ["v=DKIM1; k=rsa; p=AB", "CD"] },
        { name: "www.example.com", type: Packet.TYPE.CNAME, domain: "example.com" },
      ]),
    );
    expect(m).toMatchObject({ id: 4242, isResponse: true, truncated: false, rcode: 0, question: { name: "example.com", type: 15 } });
    expect(m.answers.map((a) => a.data)).toEqual([
      { type: "A", address: "192.0.2.7" },
      { type: "AAAA", address: "2001:db8:0:0:0:0:0:1" },
      { type: "MX", preference: 10, exchange: "mx1.example.com" },
      { type: "TXT", strings: ["v=DKIM1; k=rsa; p=AB", "CD"] },
      { type: "CNAME", target: "example.com" },
    ]);
    expect(m.answers[2]!.ttl).toBe(60);
  });

  test("reads a null MX (RFC 7505: preference 0, exchange the root) as an empty exchange", () => {
    const m = decodeMessage(response([{ name: "example.com", type: Packet.TYPE.MX, priority: 0, exchange: "." }]));
    expect(m.answers[0]!.data).toEqual({ type: "MX", preference: 0, exchange: "" });
  });

  test("reads the SOA MINIMUM of a negative answer and the NXDOMAIN code", () => {
    const soa = {
      name: "example.com", type: Packet.TYPE.SOA, class: Packet.CLASS.IN, ttl: 900,
      primary: "ns.example.com", admin: "hostmaster.example.com", serial: 1, refresh: 2, retry: 3, expiration: 4, minimum: 120,
    };
    const m = decodeMessage(response([], [soa], Packet.RCODE.NXDOMAIN));
    expect(m.rcode).toBe(3);
    expect(m.authorities[0]).toEqual({ name: "example.com", ttl: 900, data: { type: "SOA", minimum: 120 } });
  });

  test("treats a TTL with the top bit set as zero (RFC 2181 §8)", () => {
    const buf = response([{ name: "example.com", type: Packet.TYPE.A, address: "192.0.2.1" }]);
    // The answer's TTL sits 10 octets after its owner name (a 2-octet pointer) and type/class.
    const ttlAt = buf.length - 4 - 2 - 4;
    buf.writeUInt32BE(0x80000001, ttlAt);
    expect(decodeMessage(buf).answers[0]!.ttl).toBe(0);
  });

  test.each([
    ["a message shorter than its header", Buffer.alloc(11)],
    ["a name pointing forwards (a pointer loop guard)", Buffer.from([0, 1, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1])],
    ["a label running past the end", Buffer.from([0, 1, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0, 5, 0x61, 0x62])],
    ["an answer cut short", response([{ name: "example.com", type: Packet.TYPE.A, address: "192.0.2.1" }]).subarray(0, 40)],
  ])("rejects %s", (_what, buf) => {
    expect(() => decodeMessage(buf)).toThrow(DnsWireError);
  });

  test("rejects a TXT character-string that runs past its record", () => {
    const buf = response([{ name: "example.com", type: Packet.TYPE.TXT, data: ["abc"] }]);
    buf[buf.length - 4] = 200; // the character-string length octet
    expect(() => decodeMessage(buf)).toThrow(DnsWireError);
  });
});
