// A real DNS server for tests (dns2), answering over UDP and TCP on one loopback port from zones the test
// controls: records with TTLs, NXDOMAIN vs NODATA (with an SOA for negative caching), CNAME chains, SERVFAIL,
// REFUSED, silence (a timeout for the client) and delays, per name or per name and type. It logs every question so
// tests can count lookups.
import type { AddressInfo, Socket } from "node:net";
import dns2 from "dns2";
import type { DnsServerAddress } from "../../src/dns/resolver.js";

const { Packet } = dns2;

export type RecordInput =
  | { type: "A" | "AAAA"; address: string }
  | { type: "CNAME" | "PTR"; target: string }
  | { type: "MX"; preference: number; exchange: string }
  /**
   * One TXT record; several strings make one record of several character-strings (a long DKIM key). SPF is the
   * obsolete SPF RR type (99) of RFC 4408 with the same data.
   */
  | { type: "TXT" | "SPF"; text: string | string[] };

export type Failure = "servfail" | "refused" | "timeout";

export interface TestDnsServer {
  readonly address: DnsServerAddress;
  /** "127.0.0.1:port", the DNS_SERVERS value that reaches this server. */
  readonly serverList: string;
  /** Replaces the records of one type at a name. */
  set(name: string, records: RecordInput[], ttl?: number): void;
  /** Removes the records of one type at a name, or every record at it. */
  remove(name: string, type?: RecordInput["type"]): void;
  /** Makes questions about a name (any type, or one type: each type its own) fail this way until cleared. */
  fail(name: string, failure: Failure, type?: RecordInput["type"]): void;
  /** Clears every failure set for a name. */
  clearFailure(name: string): void;
  /** Removes every record, failure and delay. */
  clear(): void;
  /** Holds every answer about a name (or every answer, for "*") this long. */
  delay(name: string, ms: number): void;
  /**
   * Holds every answer about these names until a question about each of them has arrived, then sends them all (and
   * answers later questions at once): lookups made in parallel are answered, lookups made one after another never
   * are (each times out). Proves parallelism by events, not by wall time.
   */
  answerTogether(names: readonly string[]): void;
  /** The SOA TTL and MINIMUM of negative answers (NXDOMAIN, NODATA). */
  negativeTtl: number;
  /** How many questions arrived for a name (and type), over either transport. */
  queries(name: string, type?: RecordInput["type"]): number;
  /** Questions that arrived over TCP. */
  tcpQueries(name: string): number;
  /** Every question that arrived, of any name. */
  readonly totalQueries: number;
  stop(): Promise<void>;
}

interface Stored {
  readonly record: RecordInput;
  readonly ttl: number;
}

const norm = (name: string) => name.replace(/\.$/, "").toLowerCase();

export async function startDnsServer(host = "127.0.0.1"): Promise<TestDnsServer> {
  const zone = new Map<string, Stored[]>();
  // Keyed by name, then by type ("*" for any type).
  const failures = new Map<string, Map<string, Failure>>();
  const delays = new Map<string, number>();
  /** answerTogether's names, those not asked yet, and the answers held until they are. */
  let together: { names: ReadonlySet<string>; unasked: Set<string>; held: (() => void)[] } | null = null;
  const log: { name: string; type: string; tcp: boolean }[] = [];
  let negativeTtl = 60;

  const exists = (name: string) => [...zone.keys()].some((owner) => owner === name || owner.endsWith(`.${name}`));

  const handle = (request: dns2.Packet, send: (response: dns2.Packet) => Promise<Buffer>, tcp: boolean) => {
    const question = request.questions[0];
    if (!question) return;
    const name = norm(question.name);
    const type = Packet.typeName(question.type);
    log.push({ name, type, tcp });
    const response = Packet.createResponseFromRequest(request);
    response.header.ra = 1;
    const failure = failures.get(name)?.get(type) ?? failures.get(name)?.get("*");
    if (failure) {
      if (failure === "timeout") return;
      response.header.rcode = failure === "servfail" ? Packet.RCODE.SERVFAIL : Packet.RCODE.REFUSED;
      void send(response);
      return;
    }
    let owner = name;
    for (let hops = 0; hops < 8; hops++) {
      const here = zone.get(owner) ?? [];
      const cname = here.find((s) => s.record.type === "CNAME");
      if (cname && type !== "CNAME" && cname.record.type === "CNAME") {
        response.answers.push(resource(owner, cname));
        owner = norm(cname.record.target);
        continue;
      }
      for (const stored of here) if (stored.record.type === type) response.answers.push(resource(owner, stored));
      break;
    }
    if (response.answers.length === 0 || response.answers.every((a) => a.type === Packet.TYPE.CNAME && type !== "CNAME")) {
      if (response.answers.length === 0 && !exists(name)) response.header.rcode = Packet.RCODE.NXDOMAIN;
      response.authorities.push({
        name: name.split(".").slice(-2).join("."),
        type: Packet.TYPE.SOA,
        class: Packet.CLASS.IN,
        ttl: negativeTtl,
        primary: "ns.test",
        admin: "hostmaster.test",
        serial: 1,
        refresh: 3600,
        retry: 600,
        expiration: 86400,
        minimum: negativeTtl,
      } as never);
    }
    const wait = delays.get(name) ?? delays.get("*") ?? 0;
    const answer = wait > 0 ? () => void setTimeout(() => void send(response), wait) : () => void send(response);
    if (together?.names.has(name)) {
      together.unasked.delete(name);
      if (together.unasked.size > 0) {
        together.held.push(answer);
        return;
      }
      const { held } = together;
      together = null;
      for (const release of held) release();
    }
    answer();
  };

  // The UDP port is the system's choice; the same number over TCP may be taken by another socket of the run: then
  // both are given up and another pair tried (a bounded number of times).
  let udp: ReturnType<typeof dns2.createUDPServer>;
  let tcp: ReturnType<typeof dns2.createTCPServer>;
  let port = 0;
  const connections = new Set<Socket>();
  for (let attempt = 1; ; attempt++) {
    udp = dns2.createUDPServer((req, send) => handle(req, send as never, false));
    udp.on("requestError", () => undefined);
    await udp.listen(0, host);
    port = (udp.address() as AddressInfo).port;
    tcp = dns2.createTCPServer((req, send) => handle(req, send as never, true));
    tcp.on("requestError", () => undefined);
    // Connections left waiting by a "timeout" failure would hold close() for the server's idle timeout.
    tcp.on("connection", (socket: Socket) => {
      connections.add(socket);
      socket.once("close", () => connections.delete(socket));
    });
    const listening = tcp;
    try {
      await new Promise<void>((resolve, reject) => {
        listening.once("error", reject);
        listening.listen(port, host, () => resolve());
      });
      break;
    } catch (e) {
      await udp.close();
      if ((e as NodeJS.ErrnoException).code !== "EADDRINUSE" || attempt >= 20) throw e;
    }
  }

  return {
    address: { host, port },
    serverList: `${host}:${port}`,
    set(name, records, ttl = 300) {
      const owner = norm(name);
      const types = new Set(records.map((r) => r.type));
      const kept = (zone.get(owner) ?? []).filter((s) => !types.has(s.record.type));
      zone.set(owner, [...kept, ...records.map((record) => ({ record, ttl }))]);
    },
    remove(name, type) {
      const owner = norm(name);
      const kept = type === undefined ? [] : (zone.get(owner) ?? []).filter((s) => s.record.type !== type);
      if (kept.length === 0) zone.delete(owner);
      else zone.set(owner, kept);
    },
    fail(name, failure, type) {
      const owner = norm(name);
      if (!failures.has(owner)) failures.set(owner, new Map());
      failures.get(owner)!.set(type ?? "*", failure);
    },
    clearFailure(name) {
      failures.delete(norm(name));
    },
    clear() {
      zone.clear();
      failures.clear();
      delays.clear();
    },
    answerTogether(names) {
      together = { names: new Set(names.map(norm)), unasked: new Set(names.map(norm)), held: [] };
    },
    delay(name, ms) {
      delays.set(name === "*" ? "*" : norm(name), ms);
    },
    get negativeTtl() {
      return negativeTtl;
    },
    set negativeTtl(ttl: number) {
      negativeTtl = ttl;
    },
    queries: (name, type) => log.filter((q) => q.name === norm(name) && (type === undefined || q.type === type)).length,
    tcpQueries: (name) => log.filter((q) => q.name === norm(name) && q.tcp).length,
    get totalQueries() {
      return log.length;
    },
    async stop() {
      await new Promise<void>((resolve) => udp.close(() => resolve()));
      for (const socket of connections) socket.destroy();
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
    },
  };
}

function resource(owner: string, { record, ttl }: Stored): dns2.Packet.Resource {
  const base = { name: owner, class: Packet.CLASS.IN, ttl };
  switch (record.type) {
    case "A":
      return { ...base, type: Packet.TYPE.A, address: record.address } as never;
    case "AAAA":
      return { ...base, type: Packet.TYPE.AAAA, address: record.address } as never;
    case "CNAME":
    case "PTR":
      return { ...base, type: Packet.TYPE[record.type], domain: record.target } as never;
    case "MX":
      return { ...base, type: Packet.TYPE.MX, priority: record.preference, exchange: record.exchange } as never;
    case "TXT":
    case "SPF":
      return { ...base, type: Packet.TYPE[record.type], data: characterStrings(record.text) } as never;
  }
}

/** A TXT record's character-strings: each at most 255 octets (RFC 1035 §3.3), so a longer string is split. */
function characterStrings(text: string | string[]): Buffer[] {
  return (Array.isArray(text) ? text : [text]).flatMap((string) => {
    const bytes = Buffer.from(string, "utf8");
    if (bytes.length <= 255) return [bytes];
    const parts: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += 255) parts.push(bytes.subarray(at, at + 255));
    return parts;
  });
}
