// Where DNS questions go: the DNS_SERVERS list (IP:port, [IPv6]:port, or an IP alone for port 53), or the
// system's resolvers when it is unset.
import { getServers } from "node:dns";
import net from "node:net";
import { createResolver, type DnsResolver, type DnsServerAddress } from "./resolver.js";

/** Parses "127.0.0.1:5353, [::1]:53, 10.0.0.2"; returns the entries it cannot read in `invalid`. */
export function parseDnsServers(list: string): { servers: DnsServerAddress[]; invalid: string[] } {
  const servers: DnsServerAddress[] = [];
  const invalid: string[] = [];
  for (const entry of list.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const server = parseOne(entry);
    if (server) servers.push(server);
    else invalid.push(entry);
  }
  return { servers, invalid };
}

function parseOne(entry: string): DnsServerAddress | undefined {
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry);
  const plain = /^([^:]+)(?::(\d{1,5}))?$/.exec(entry);
  const [host, port] = bracketed
    ? [bracketed[1]!, bracketed[2]]
    : net.isIPv6(entry)
      ? [entry, undefined]
      : [plain?.[1] ?? "", plain?.[2]];
  const portNumber = port === undefined ? 53 : Number(port);
  if (!net.isIP(host) || !Number.isInteger(portNumber) || portNumber < 1 || portNumber > 65535) return undefined;
  return { host, port: portNumber };
}

/** The resolvers the operating system uses (resolv.conf on Linux). */
function systemDnsServers(): DnsServerAddress[] {
  return parseDnsServers(getServers().join(",")).servers;
}

/** The resolver every DNS question of the service goes through: DNS_SERVERS, else the system's resolvers. */
export function createConfiguredResolver(config: {
  readonly dnsServers: readonly DnsServerAddress[] | undefined;
  readonly dnsTimeoutMs: number;
  readonly dnsFailureCacheSeconds: number;
}): DnsResolver {
  const servers = config.dnsServers ?? systemDnsServers();
  // Without a server every lookup is a temporary failure (validation says unknown, verification keeps its grace)
  // rather than a process that cannot start its other roles.
  if (servers.length === 0) {
    const reason = "no DNS server: DNS_SERVERS is unset and the system lists none";
    return { lookup: async () => ({ kind: "temporary", reason }) };
  }
  return { ...createResolver({ servers, timeoutMs: config.dnsTimeoutMs }), failureCacheSeconds: config.dnsFailureCacheSeconds };
}
