// A stub resolver over UDP (TCP when an answer is truncated) that tells apart what callers must treat
// differently: a name that does not exist or has no such records (definitive, cacheable for the negative TTL) and
// a server that failed or did not answer (temporary: a cache keeps it briefly, see cache.ts). It never throws for
// DNS trouble.
import { randomInt } from "node:crypto";
import dgram from "node:dgram";
import net from "node:net";
import { decodeMessage, encodeQuery, RCODE, TYPE, type DnsMessage, type QueryType, type RecordData } from "./wire.js";

export interface DnsServerAddress {
  readonly host: string;
  readonly port: number;
}

/** The record values of each query type, as callers want them. */
export interface RecordValue {
  A: string;
  AAAA: string;
  MX: { readonly preference: number; readonly exchange: string };
  /** A TXT record's character-strings joined without separator, as SPF (RFC 7208 §3.3) and DKIM read them. */
  TXT: string;
  /** The host name a reverse-mapping name points to, lower-cased, without the trailing dot. */
  PTR: string;
}

export type DnsLookup<T extends QueryType = QueryType> =
  | { readonly kind: "answer"; readonly records: readonly RecordValue[T][]; readonly ttl: number }
  /** NXDOMAIN: the name does not exist. ttl is the negative-caching TTL (RFC 2308 §5), 0 when not cacheable. */
  | { readonly kind: "nxdomain"; readonly ttl: number }
  /** NOERROR with no record of the type (RFC 2308 §2.2). */
  | { readonly kind: "nodata"; readonly ttl: number }
  /** SERVFAIL, REFUSED, a timeout, a malformed answer or a network error: try again later. */
  | { readonly kind: "temporary"; readonly reason: string };

export interface DnsResolver {
  lookup<T extends QueryType>(name: string, type: T): Promise<DnsLookup<T>>;
  /**
   * How long a cache in front of this resolver keeps a temporary failure (RFC 9520), in seconds: the configured
   * resolver carries DNS_FAILURE_CACHE_SECONDS. Unset or 0: failures are never kept.
   */
  readonly failureCacheSeconds?: number;
}

export interface ResolverOptions {
  readonly servers: readonly DnsServerAddress[];
  /** How long one attempt waits for an answer. */
  readonly timeoutMs: number;
  /** Attempts per lookup, each on the next server; defaults to ATTEMPTS. */
  readonly attempts?: number;
}

/** Two attempts: one lost datagram or one failing server does not fail a lookup; more would only add latency. */
const ATTEMPTS = 2;

class Temporary extends Error {}

export function createResolver(options: ResolverOptions): DnsResolver {
  if (options.servers.length === 0) throw new Error("the resolver needs at least one DNS server");
  const attempts = options.attempts ?? ATTEMPTS;
  // Rotating the first server spreads load and keeps one dead server from being every lookup's first try.
  let next = 0;

  return {
    async lookup<T extends QueryType>(name: string, type: T): Promise<DnsLookup<T>> {
      const first = next++;
      let reason = "no attempt made";
      for (let attempt = 0; attempt < attempts; attempt++) {
        const server = options.servers[(first + attempt) % options.servers.length]!;
        try {
          const message = await exchange(server, name, type, options.timeoutMs);
          return interpret(message, name, type);
        } catch (e) {
          if (!(e instanceof Temporary)) throw e;
          reason = `${e.message} (${server.host}:${server.port})`;
        }
      }
      return { kind: "temporary", reason };
    },
  };
}

/** One query over UDP, repeated over TCP when the UDP answer is truncated (RFC 7766 §5). */
async function exchange(server: DnsServerAddress, name: string, type: QueryType, timeoutMs: number): Promise<DnsMessage> {
  const id = randomInt(0x10000);
  const query = encodeQuery(id, name, type);
  const udp = await overUdp(server, query, (m) => matches(m, id, name, type), timeoutMs);
  if (!udp.truncated) return udp;
  const tcp = await overTcp(server, query, timeoutMs);
  if (!matches(tcp, id, name, type)) throw new Temporary("the TCP answer does not match the query");
  return tcp;
}

// RFC 5452 §4.1: accept only an answer to our id and our question, from the server asked (a connected socket
// drops datagrams from anyone else).
function matches(m: DnsMessage, id: number, name: string, type: QueryType): boolean {
  return m.isResponse && m.id === id && m.question?.type === TYPE[type] && m.question.name === canonical(name);
}

function overUdp(
  server: DnsServerAddress,
  query: Buffer,
  accept: (m: DnsMessage) => boolean,
  timeoutMs: number,
): Promise<DnsMessage> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket(net.isIPv6(server.host) ? "udp6" : "udp4");
    let settled = false;
    const done = (settle: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.close();
      settle();
    };
    const timer = setTimeout(() => done(() => reject(new Temporary(`no answer within ${timeoutMs} ms`))), timeoutMs);
    socket.on("message", (buf) => {
      let message: DnsMessage;
      try {
        message = decodeMessage(buf);
      } catch {
        return; // a mangled datagram is not the answer; keep waiting for the real one until the timeout
      }
      if (accept(message)) done(() => resolve(message));
    });
    // ECONNREFUSED (ICMP port unreachable) and the like arrive here on a connected socket.
    socket.on("error", (e) => done(() => reject(new Temporary(e.message))));
    socket.connect(server.port, server.host, () => socket.send(query));
  });
}

function overTcp(server: DnsServerAddress, query: Buffer, timeoutMs: number): Promise<DnsMessage> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: server.host, port: server.port });
    let received = Buffer.alloc(0);
    let settled = false;
    const done = (settle: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      settle();
    };
    const timer = setTimeout(() => done(() => reject(new Temporary(`no TCP answer within ${timeoutMs} ms`))), timeoutMs);
    const length = Buffer.alloc(2);
    length.writeUInt16BE(query.length);
    socket.on("connect", () => socket.write(Buffer.concat([length, query])));
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 2 || received.length < 2 + received.readUInt16BE(0)) return;
      const body = received.subarray(2, 2 + received.readUInt16BE(0));
      try {
        const message = decodeMessage(body);
        done(() => resolve(message));
      } catch (e) {
        done(() => reject(new Temporary(`a malformed TCP answer: ${(e as Error).message}`)));
      }
    });
    socket.on("error", (e) => done(() => reject(new Temporary(e.message))));
    socket.on("end", () => done(() => reject(new Temporary("the server closed the TCP connection before answering"))));
  });
}

function interpret<T extends QueryType>(m: DnsMessage, name: string, type: T): DnsLookup<T> {
  switch (m.rcode) {
    case RCODE.NOERROR:
      break;
    case RCODE.NXDOMAIN:
      return { kind: "nxdomain", ttl: negativeTtl(m) };
    case RCODE.SERVFAIL:
      throw new Temporary("SERVFAIL");
    case RCODE.REFUSED:
      throw new Temporary("REFUSED");
    default:
      throw new Temporary(`response code ${m.rcode}`);
  }
  // A recursive answer may lead through CNAMEs (RFC 1034 §3.6.2): the records of the type belong to the end of
  // the chain, and the answer lives as long as its shortest-lived link.
  const owners = new Set([canonical(name)]);
  let ttl = Number.POSITIVE_INFINITY;
  for (let grew = true; grew; ) {
    grew = false;
    for (const rr of m.answers) {
      if (rr.data.type === "CNAME" && owners.has(rr.name) && !owners.has(rr.data.target)) {
        owners.add(rr.data.target);
        ttl = Math.min(ttl, rr.ttl);
        grew = true;
      }
    }
  }
  const records: RecordValue[T][] = [];
  for (const rr of m.answers) {
    if (!owners.has(rr.name)) continue;
    const value = valueOf(rr.data, type);
    if (value === undefined) continue;
    records.push(value);
    ttl = Math.min(ttl, rr.ttl);
  }
  if (records.length === 0) return { kind: "nodata", ttl: negativeTtl(m) };
  return { kind: "answer", records, ttl };
}

function valueOf<T extends QueryType>(data: RecordData, type: T): RecordValue[T] | undefined {
  if (data.type !== type) return undefined;
  switch (data.type) {
    case "A":
    case "AAAA":
      return data.address as RecordValue[T];
    case "MX":
      return { preference: data.preference, exchange: data.exchange } as RecordValue[T];
    case "TXT":
      return data.strings.join("") as RecordValue[T];
    case "PTR":
      return data.target as RecordValue[T];
    default:
      return undefined;
  }
}

/** RFC 2308 §5: a negative answer lives min(SOA TTL, SOA MINIMUM); without an SOA it is not cached. */
function negativeTtl(m: DnsMessage): number {
  for (const rr of m.authorities) if (rr.data.type === "SOA") return Math.min(rr.ttl, rr.data.minimum);
  return 0;
}

function canonical(name: string): string {
  return (name.endsWith(".") ? name.slice(0, -1) : name).toLowerCase();
}
