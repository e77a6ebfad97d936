// Where mail for a recipient domain goes next (RFC 5321 §5.1): an SMTP_ROUTES entry first (a transport map, like
// Postfix's), then our own SMTP for the managed domain (agents mail agents), else the domain's MX hosts by
// preference, each resolved to its addresses with the same resolver, or the domain itself when it has no MX
// (implicit MX). A null MX (RFC 7505) or a domain that does not exist is final; a DNS failure is temporary.
//
// The recipient domain is the tenant's choice, and so are its DNS records: an MX address that is not public
// (loopback, private, link-local, …: the webhooks' policy, src/net/address-policy.ts) is never connected to, so a
// tenant cannot reach the service's own network on port 25 and read the peer's reply in its submission. Routes
// and the managed domain are the operator's, and trusted. Hops are addresses, so what was checked is what is
// connected to (no second lookup for DNS rebinding to race).
import net from "node:net";
import type { DnsLookup, DnsResolver } from "../../dns/resolver.js";
import { refusedAddress, type AddressPolicy } from "../../net/address-policy.js";
import { mailHostOf } from "../../validation/classify.js";
import type { TransportFailure } from "../classify-smtp-result.js";
import { routeFor, type SmtpRoute } from "../smtp-routes.js";

/** One address to try, in order. */
export interface Hop {
  /** What to connect to: an IP address, or a route's host name (resolved by the system when connecting). */
  readonly host: string;
  readonly port: number;
  /** The MX (or route) host name: the TLS server name and what logs show. */
  readonly name: string;
}

export type NextHops = { readonly kind: "hops"; readonly hops: readonly Hop[] } | { readonly kind: "failure"; readonly failure: TransportFailure };

export interface NextHopSettings {
  readonly routes: readonly SmtpRoute[];
  readonly managedDomain: string;
  /** Our own inbound SMTP: where managed-domain mail goes without a route. */
  readonly localSmtp: { readonly host: string; readonly port: number };
  /** The port of MX hosts: 25, except in tests. */
  readonly mxPort: number;
  /** MX hosts exempt from the public-address check (DELIVERY_ALLOW_HOSTS: development and tests only). */
  readonly addressPolicy: AddressPolicy;
  readonly resolver: DnsResolver;
}

/** At most this many addresses per attempt, as Postfix's smtp_mx_address_limit bounds a slow domain's cost. */
const MAX_ADDRESSES = 10;

/** The connect address of a bind address: a wildcard listener is reached on loopback. */
export function connectHostOf(bindHost: string): string {
  if (bindHost === "0.0.0.0" || bindHost === "") return "127.0.0.1";
  if (bindHost === "::" || bindHost === "[::]") return "::1";
  return bindHost;
}

export async function nextHops(domain: string, settings: NextHopSettings): Promise<NextHops> {
  const name = domain.toLowerCase();
  const route = routeFor(settings.routes, name);
  if (route) return { kind: "hops", hops: [{ host: route.host, port: route.port, name: route.host }] };
  if (name === settings.managedDomain) {
    return { kind: "hops", hops: [{ ...settings.localSmtp, name: settings.localSmtp.host }] };
  }
  const candidates: Candidate[] = [];
  let temporary: string | undefined;
  if (net.isIP(name)) {
    candidates.push({ ip: name, name });
  } else {
    const mx = await settings.resolver.lookup(name, "MX");
    const [a, aaaa] = mx.kind === "nodata" ? await Promise.all([settings.resolver.lookup(name, "A"), settings.resolver.lookup(name, "AAAA")]) : [];
    const host = mailHostOf(mx, a, aaaa);
    switch (host.kind) {
      case "null_mx":
        return failure("ENULLMX", `${name} accepts no mail (null MX, RFC 7505)`);
      case "nxdomain":
        return failure("ENODOMAIN", `${name} does not exist (NXDOMAIN)`);
      case "none":
        return failure("ENODOMAIN", `${name} has no MX, A or AAAA record`);
      case "temporary":
        return failure("EDNS", `DNS lookup of ${name} failed: ${host.reason}`);
      case "implicit":
        for (const ip of [...answers(a), ...answers(aaaa)]) candidates.push({ ip, name });
        break;
      case "mx": {
        // Resolved in parallel, tried in preference order (mailHostOf sorted them).
        const resolved = await Promise.all(
          host.hosts.map(async (mxHost) => {
            if (net.isIP(mxHost)) return { mxHost, ips: [mxHost], temporary: undefined };
            const [v4, v6] = await Promise.all([settings.resolver.lookup(mxHost, "A"), settings.resolver.lookup(mxHost, "AAAA")]);
            const ips = [...answers(v4), ...answers(v6)];
            const reason = [v4, v6].find((l) => l.kind === "temporary");
            return { mxHost, ips, temporary: ips.length === 0 && reason?.kind === "temporary" ? reason.reason : undefined };
          }),
        );
        for (const r of resolved) {
          temporary ??= r.temporary;
          for (const ip of r.ips) candidates.push({ ip, name: r.mxHost });
        }
      }
    }
  }

  // Refused addresses are left out before the limit, so they cannot crowd out the public ones.
  const refused: string[] = [];
  const hops: Hop[] = [];
  for (const c of candidates) {
    const why = refusedAddress(settings.addressPolicy, c.ip, [c.name, c.ip]);
    if (why) refused.push(c.name === c.ip ? `${c.ip} (${why})` : `${c.name} at ${c.ip} (${why})`);
    else if (hops.length < MAX_ADDRESSES) hops.push({ host: c.ip, port: settings.mxPort, name: c.name });
  }
  if (hops.length > 0) return { kind: "hops", hops };
  // MX hosts without addresses: a misconfiguration that may be fixed, so it is retried (as Postfix defers it).
  if (temporary) return failure("EDNS", `DNS lookup of the MX hosts of ${name} failed: ${temporary}`);
  // Only addresses we never connect to: final, so nothing is retried for days. No connection was made.
  if (refused.length > 0) return failure("ENOTPUBLIC", `${name} has no public address to deliver to: ${refused.slice(0, 3).join(", ")}`);
  return failure("EDNS", `no MX host of ${name} has an address`);
}

/** An address to deliver to, with the host name it was found through. */
interface Candidate {
  readonly ip: string;
  readonly name: string;
}

function answers(lookup: DnsLookup<"A"> | DnsLookup<"AAAA"> | undefined): string[] {
  return lookup?.kind === "answer" ? [...lookup.records] : [];
}

function failure(code: string, message: string): NextHops {
  return { kind: "failure", failure: { code, message } };
}
