// Customer domains: registration (name rules, platform limit, DNS records and a DKIM key of its own), reads,
// verification on request, and the traffic view.
import { randomBytes } from "node:crypto";
import type { Principal } from "../auth/principal.js";
import { requireUnrestrictedInboxes } from "../auth/principal.js";
import { CustomerDomain } from "../db/entities/index.js";
import type { CustomerDomainRow } from "../db/entities/customer-domain.js";
import type { TenantStore } from "../db/tenant-store.js";
import { isAtOrBelow, toAsciiDomain } from "../dns/names.js";
import { Conflict, InvalidRequest, NotFound } from "../errors.js";
import { newUuid } from "../ids.js";
import type { Logger } from "../logger.js";
import type { CursorCodec } from "../pagination/cursor.js";
import { newestFirstPage, type Page, type PageRequest } from "../pagination/keyset.js";
import { initialCapability } from "./capability-state.js";
import type { DomainRecordSettings } from "./checks.js";
import { generateDkimKeyPair, type DkimKeyVault } from "./dkim-keys.js";
import type { DomainVerifier, Verification } from "./verifier.js";

/** Starts the re-check workflow of a domain; idempotent per domain. */
export interface DomainVerificationStarter {
  start(domain: { readonly id: string; readonly organizationId: string }): Promise<void>;
}

export interface DomainsDeps {
  readonly managedDomain: string;
  readonly domainLimit: number;
  readonly records: DomainRecordSettings;
  readonly cursors: CursorCodec;
  readonly vault: DkimKeyVault;
  readonly verifier: DomainVerifier;
  readonly workflows: DomainVerificationStarter;
  readonly log: Logger;
}

export interface DomainTraffic {
  readonly domain: CustomerDomainRow;
  readonly inboundMessages24h: number;
  readonly outboundMessages24h: number;
}

/** Special-use names that are never delegated in the public DNS (RFC 6761 §6.3, §6.4). */
const UNDELEGATED_TLDS = new Set(["localhost", "invalid"]);

export type Domains = ReturnType<typeof createDomains>;

export function createDomains(deps: DomainsDeps) {
  async function find(store: TenantStore, domainId: string): Promise<CustomerDomainRow> {
    const domain = await store.findOne(CustomerDomain, { id: domainId });
    if (!domain) throw new NotFound("domain");
    return domain;
  }

  return {
    find,

    async create(store: TenantStore, principal: Principal, name: string): Promise<CustomerDomainRow> {
      requireUnrestrictedInboxes(principal, "register domains");
      const domain = registrableName(name, deps.managedDomain);
      // Before the key is made and the lock taken; of concurrent registrations of one name the unique constraint
      // lets one win (409 domain_exists, src/db/unique-conflicts.ts).
      if ((await store.count(CustomerDomain, { domain })) > 0) {
        throw new Conflict("domain_exists", `${domain} is already registered in this organization`);
      }
      // Key generation takes tens of milliseconds of CPU: before the transaction, not while it holds a lock.
      const keys = await generateDkimKeyPair();
      const id = newUuid();
      const limit = {
        entity: CustomerDomain,
        counted: {},
        max: deps.domainLimit,
        noun: "domains",
        errorCode: "domain_limit_reached",
      };
      return store.createWithinLimit(limit, (tx) => {
        const now = new Date();
        return tx.create(CustomerDomain, {
          id,
          domain,
          ownershipToken: randomBytes(16).toString("hex"),
          dkimSelector: `mbx${randomBytes(4).toString("hex")}`,
          dkimPublicKey: keys.publicKey,
          dkimPrivateKeyEncrypted: deps.vault.seal(id, keys.privateKeyPem),
          inbound: initialCapability(),
          outbound: initialCapability(),
          lastChecks: null,
          lastCheckedAt: null,
          createdAt: now,
          updatedAt: now,
        });
      });
    },

    list(store: TenantStore, page: PageRequest): Promise<Page<CustomerDomainRow>> {
      return newestFirstPage(store, deps.cursors, { entity: CustomerDomain, resource: "domains" }, page);
    },

    /**
     * Checks the records now. The re-check workflow is (re)started here rather than at registration: before the
     * first verification there is nothing to keep verified. The check is recorded whether or not the start works:
     * a lost start is made good by the next verify, or by the verification reconciler once a check is overdue.
     */
    async verify(store: TenantStore, principal: Principal, domainId: string): Promise<Verification> {
      requireUnrestrictedInboxes(principal, "verify domains");
      await find(store, domainId);
      const verification = await deps.verifier.verify(domainId);
      if (!verification) throw new NotFound("domain");
      await deps.workflows
        .start({ id: domainId, organizationId: store.organizationId })
        .catch((e: unknown) => deps.log.warn("domain verification workflow not started; the reconciler will start it", { domainId, error: e }));
      return verification;
    },

    async traffic(store: TenantStore, domainId: string): Promise<DomainTraffic> {
      const domain = await find(store, domainId);
      const since = new Date(Date.now() - 24 * 3_600_000);
      // Inbound: messages received by the domain's inboxes. Outbound: submissions sent from the domain, through an
      // inbox or /v1/send alike.
      const [counts] = await store.sqlRead<{ inbound: number; outbound: number }>((organizationId) => ({
        text: `select
           (select count(*)::int from messages m join inboxes i on i.id = m.inbox_id
             where i.organization_id = $1 and i.domain_id = $2 and m.organization_id = $1 and m.direction = 'inbound' and m.created_at > $3) as inbound,
           (select count(*)::int from submissions s
             where s.organization_id = $1 and s.created_at > $3 and lower(s."from"->>'email') like $4) as outbound`,
        values: [organizationId, domainId, since, `%@${domain.domain.replace(/[\\%_]/g, "\\$&")}`],
      }));
      return { domain, inboundMessages24h: counts?.inbound ?? 0, outboundMessages24h: counts?.outbound ?? 0 };
    },
  };
}

/** The A-label form of a name an organization may register, or a 400 invalid_domain saying why not. */
export function registrableName(name: string, managedDomain: string): string {
  const ascii = toAsciiDomain(name.trim());
  if (!ascii.ok) throw new InvalidRequest(`domain: ${ascii.problem}`, "invalid_domain");
  const { domain } = ascii;
  if (isAtOrBelow(domain, managedDomain)) {
    throw new InvalidRequest(`domain: ${managedDomain} and the names below it belong to the service`, "invalid_domain");
  }
  if (UNDELEGATED_TLDS.has(domain.slice(domain.lastIndexOf(".") + 1))) {
    throw new InvalidRequest("domain: a special-use name that public DNS never resolves", "invalid_domain");
  }
  return domain;
}
