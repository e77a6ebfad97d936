// The DNS wire format (RFC 1035 §4) for the few things the resolver asks: one question out, one message back with
// A, AAAA, MX, TXT, PTR, CNAME and SOA records decoded. It is small enough to own; the test DNS server (dns2) is a
// separate implementation, so the tests check this codec against another one rather than against itself.

/** Record type codes (RFC 1035 §3.2.2, RFC 3596 for AAAA, RFC 6891 for OPT). */
export const TYPE = { A: 1, CNAME: 5, SOA: 6, PTR: 12, MX: 15, TXT: 16, AAAA: 28, OPT: 41 } as const;

/** Response codes (RFC 1035 §4.1.1). */
export const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;

/** PTR is asked only by SPF (its ptr mechanism and %{p} macro, RFC 7208 §5.5 and §7.3). */
export type QueryType = "A" | "AAAA" | "MX" | "TXT" | "PTR";

export type RecordData =
  | { readonly type: "A" | "AAAA"; readonly address: string }
  | { readonly type: "CNAME"; readonly target: string }
  | { readonly type: "PTR"; readonly target: string }
  | { readonly type: "MX"; readonly preference: number; readonly exchange: string }
  /** The character-strings of one TXT record, in order (RFC 1035 §3.3.14). */
  | { readonly type: "TXT"; readonly strings: readonly string[] }
  /** Only what negative caching needs (RFC 2308 §5). */
  | { readonly type: "SOA"; readonly minimum: number }
  | { readonly type: "other"; readonly code: number };

export interface ResourceRecord {
  /** The owner name, lower-cased, without the trailing dot. */
  readonly name: string;
  readonly ttl: number;
  readonly data: RecordData;
}

export interface DnsMessage {
  readonly id: number;
  readonly isResponse: boolean;
  readonly truncated: boolean;
  readonly rcode: number;
  readonly question: { readonly name: string; readonly type: number } | undefined;
  readonly answers: readonly ResourceRecord[];
  readonly authorities: readonly ResourceRecord[];
}

export class DnsWireError extends Error {}

/**
 * The UDP payload size advertised through EDNS: the value the DNS flag day 2020 settled on, small enough to avoid
 * IP fragmentation, big enough for a DKIM key record.
 */
export const EDNS_UDP_PAYLOAD = 1232;

/** A recursive query for one name and type, with an EDNS OPT record (RFC 6891 §6.1.2). */
export function encodeQuery(id: number, name: string, type: QueryType): Buffer {
  const qname = encodeName(name);
  const out = Buffer.alloc(12 + qname.length + 4 + 11);
  out.writeUInt16BE(id, 0);
  out.writeUInt16BE(0x0100, 2); // RD: ask the server to recurse
  out.writeUInt16BE(1, 4); // QDCOUNT
  out.writeUInt16BE(1, 10); // ARCOUNT: the OPT record
  qname.copy(out, 12);
  let at = 12 + qname.length;
  out.writeUInt16BE(TYPE[type], at);
  out.writeUInt16BE(1, at + 2); // class IN
  at += 4;
  out.writeUInt8(0, at); // OPT owner: the root
  out.writeUInt16BE(TYPE.OPT, at + 1);
  out.writeUInt16BE(EDNS_UDP_PAYLOAD, at + 3); // the OPT "class" carries the payload size
  out.writeUInt32BE(0, at + 5); // extended rcode, version 0, no DO bit
  out.writeUInt16BE(0, at + 9); // no options
  return out;
}

function encodeName(name: string): Buffer {
  const trimmed = name.endsWith(".") ? name.slice(0, -1) : name;
  const labels = trimmed === "" ? [] : trimmed.split(".");
  const parts: Buffer[] = [];
  for (const label of labels) {
    const bytes = Buffer.from(label, "ascii");
    if (bytes.length === 0 || bytes.length > 63) throw new DnsWireError(`the name ${name} has a label of ${bytes.length} octets`);
    parts.push(Buffer.from([bytes.length]), bytes);
  }
  parts.push(Buffer.from([0]));
  const encoded = Buffer.concat(parts);
  if (encoded.length > 255) throw new DnsWireError(`the name ${name} is longer than 255 octets`);
  return encoded;
}

export function decodeMessage(buf: Buffer): DnsMessage {
  if (buf.length < 12) throw new DnsWireError(`a message of ${buf.length} octets has no complete header`);
  const flags = buf.readUInt16BE(2);
  const counts = [buf.readUInt16BE(4), buf.readUInt16BE(6), buf.readUInt16BE(8)] as const;
  const reader = { buf, at: 12 };
  let question: DnsMessage["question"];
  for (let i = 0; i < counts[0]; i++) {
    const name = readName(reader);
    need(reader, 4);
    const q = { name, type: buf.readUInt16BE(reader.at) };
    reader.at += 4;
    question ??= q;
  }
  const answers: ResourceRecord[] = [];
  for (let i = 0; i < counts[1]; i++) answers.push(readRecord(reader));
  const authorities: ResourceRecord[] = [];
  for (let i = 0; i < counts[2]; i++) authorities.push(readRecord(reader));
  return {
    id: buf.readUInt16BE(0),
    isResponse: (flags & 0x8000) !== 0,
    truncated: (flags & 0x0200) !== 0,
    rcode: flags & 0x000f,
    question,
    answers,
    authorities,
  };
}

interface Reader {
  readonly buf: Buffer;
  at: number;
}

function need(r: Reader, octets: number): void {
  if (r.at + octets > r.buf.length) throw new DnsWireError(`the message ends at octet ${r.buf.length}, inside a record`);
}

function readRecord(r: Reader): ResourceRecord {
  const name = readName(r);
  need(r, 10);
  const type = r.buf.readUInt16BE(r.at);
  // RFC 2181 §8: a TTL with the top bit set is treated as zero.
  const rawTtl = r.buf.readUInt32BE(r.at + 4);
  const ttl = rawTtl > 0x7fffffff ? 0 : rawTtl;
  const length = r.buf.readUInt16BE(r.at + 8);
  r.at += 10;
  need(r, length);
  const end = r.at + length;
  const data = readData(r, type, end);
  r.at = end;
  return { name, ttl, data };
}

function readData(r: Reader, type: number, end: number): RecordData {
  const { buf } = r;
  const length = end - r.at;
  switch (type) {
    case TYPE.A:
      if (length !== 4) throw new DnsWireError(`an A record of ${length} octets`);
      return { type: "A", address: [...buf.subarray(r.at, end)].join(".") };
    case TYPE.AAAA: {
      if (length !== 16) throw new DnsWireError(`an AAAA record of ${length} octets`);
      const groups: string[] = [];
      for (let i = 0; i < 16; i += 2) groups.push(buf.readUInt16BE(r.at + i).toString(16));
      return { type: "AAAA", address: groups.join(":") };
    }
    case TYPE.CNAME:
      return { type: "CNAME", target: readName(r) };
    case TYPE.PTR:
      return { type: "PTR", target: readName(r) };
    case TYPE.MX: {
      need(r, 2);
      const preference = buf.readUInt16BE(r.at);
      r.at += 2;
      return { type: "MX", preference, exchange: readName(r) };
    }
    case TYPE.TXT: {
      const strings: string[] = [];
      while (r.at < end) {
        const size = buf[r.at]!;
        if (r.at + 1 + size > end) throw new DnsWireError("a TXT character-string runs past its record");
        strings.push(buf.toString("utf8", r.at + 1, r.at + 1 + size));
        r.at += 1 + size;
      }
      return { type: "TXT", strings };
    }
    case TYPE.SOA: {
      readName(r);
      readName(r);
      if (r.at + 20 > end) throw new DnsWireError("an SOA record too short for its five counters");
      return { type: "SOA", minimum: buf.readUInt32BE(r.at + 16) };
    }
    default:
      return { type: "other", code: type };
  }
}

/** A name, following compression pointers (RFC 1035 §4.1.4) only backwards, so a pointer loop cannot hang it. */
function readName(r: Reader): string {
  const labels: string[] = [];
  let at = r.at;
  let resumeAt: number | undefined;
  let octets = 0;
  for (;;) {
    if (at >= r.buf.length) throw new DnsWireError("a name runs past the end of the message");
    const size = r.buf[at]!;
    if (size === 0) {
      at += 1;
      break;
    }
    if ((size & 0xc0) === 0xc0) {
      if (at + 1 >= r.buf.length) throw new DnsWireError("a compression pointer is cut off");
      const target = ((size & 0x3f) << 8) | r.buf[at + 1]!;
      if (target >= at) throw new DnsWireError("a compression pointer points forwards");
      resumeAt ??= at + 2;
      at = target;
      continue;
    }
    if ((size & 0xc0) !== 0) throw new DnsWireError(`unknown label type 0x${size.toString(16)}`);
    if (at + 1 + size > r.buf.length) throw new DnsWireError("a label runs past the end of the message");
    octets += size + 1;
    if (octets > 255) throw new DnsWireError("a name longer than 255 octets");
    labels.push(r.buf.toString("latin1", at + 1, at + 1 + size).toLowerCase());
    at += 1 + size;
  }
  r.at = resumeAt ?? at;
  return labels.join(".");
}
