// SMTP_ROUTES: a transport map like Postfix's, `example.test=127.0.0.1:2526,*=relay.local:25`. A route names the
// next hop for a recipient domain (and its subdomains: the longest match wins), or `*` for every domain; domains
// without a route are delivered to their MX hosts.

export interface SmtpRoute {
  /** Lower-case domain, or "*" for every domain. */
  readonly domain: string;
  readonly host: string;
  readonly port: number;
}

/** Parses the list; returns the entries it cannot read in `invalid`. */
export function parseSmtpRoutes(list: string): { routes: SmtpRoute[]; invalid: string[] } {
  const routes: SmtpRoute[] = [];
  const invalid: string[] = [];
  for (const entry of list.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const m = /^(\*|[a-z0-9]([a-z0-9.-]*[a-z0-9])?)=(\[[0-9a-f:.]+\]|[a-z0-9.-]+):(\d{1,5})$/i.exec(entry);
    const port = m ? Number(m[4]) : 0;
    if (!m || port < 1 || port > 65535) {
      invalid.push(entry);
      continue;
    }
    routes.push({ domain: m[1]!.toLowerCase(), host: m[3]!.replace(/^\[|\]$/g, "").toLowerCase(), port });
  }
  return { routes, invalid };
}

/** The route of a recipient domain: an exact or parent-domain entry (longest first), else `*`, else none. */
export function routeFor(routes: readonly SmtpRoute[], domain: string): SmtpRoute | undefined {
  const name = domain.toLowerCase();
  let best: SmtpRoute | undefined;
  for (const route of routes) {
    if (route.domain === "*") continue;
    if ((name === route.domain || name.endsWith(`.${route.domain}`)) && (!best || route.domain.length > best.domain.length)) best = route;
  }
  return best ?? routes.find((r) => r.domain === "*");
}
