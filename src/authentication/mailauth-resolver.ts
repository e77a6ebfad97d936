// mailauth asks DNS through a function shaped like dns.promises.resolve; this adapts the service's resolver
// (DNS_SERVERS, timeouts, the TTL cache) to it, so every SPF, DKIM and ARC lookup goes where the operator said.
import type { DNSResolver } from "mailauth";
import type { DnsResolver, RecordValue } from "../dns/resolver.js";
import type { QueryType } from "../dns/wire.js";

export type MailauthResolver = DNSResolver;

const QUERY_TYPES: readonly string[] = ["A", "AAAA", "MX", "TXT", "PTR"] satisfies QueryType[];

/**
 * Answers as dns.promises.resolve would: ENOTFOUND and ENODATA for names and types that do not exist (SPF's void
 * lookups, a DKIM key that is not published), EBADNAME for a name the wire format refuses (an over-long label from
 * an SPF macro: a permerror), any other code for a failure (a temperror).
 */
export function mailauthResolver(resolver: DnsResolver): MailauthResolver {
  const failure = (code: string, message: string) => Object.assign(new Error(message), { code });
  return async (name, type) => {
    // Nothing mailauth's SPF, DKIM and ARC checks use is left out; DMARC is evaluated here (dmarc.ts), not by it.
    if (!QUERY_TYPES.includes(type)) throw failure("ENOTIMP", `${type} lookups are not supported`);
    let answer;
    try {
      answer = await resolver.lookup(name, type as QueryType);
    } catch (error) {
      throw failure("EBADNAME", (error as Error).message);
    }
    switch (answer.kind) {
      case "answer":
        if (type === "TXT") return (answer.records as string[]).map((text) => [text]);
        // mailauth reads MX answers as dns.promises.resolveMx gives them; its type declaration leaves them out.
        if (type === "MX") return (answer.records as RecordValue["MX"][]).map((r) => ({ exchange: r.exchange, priority: r.preference })) as never;
        return [...(answer.records as string[])];
      case "nxdomain":
        throw failure("ENOTFOUND", `${name} does not exist`);
      case "nodata":
        throw failure("ENODATA", `${name} has no ${type} record`);
      case "temporary":
        throw failure(answer.reason.startsWith("no answer") ? "ETIMEOUT" : "ESERVFAIL", answer.reason);
    }
  };
}
