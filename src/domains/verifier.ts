// Verifies a domain: looks its records up (fresh, not from a cache: a record just published must count), then
// applies the outcome to each capability under a row lock, so checks that finish together (the API, the
// re-check workflow, a use of a stale domain) each apply to the state the other left.
import { LockMode } from "@mikro-orm/core";
import type { Database } from "../db/database.js";
import { CustomerDomain } from "../db/entities/index.js";
import { systemStore, type SystemStore } from "../db/system-store.js";
import type { CustomerDomainRow } from "../db/entities/customer-domain.js";
import type { DnsResolver } from "../dns/resolver.js";
import { isEnabled, nextCapability } from "./capability-state.js";
import { dkimName, evaluateChecks, outcomeFor, ownershipName, type DomainCheck, type DomainRecordSettings } from "./checks.js";

export interface VerificationSettings extends DomainRecordSettings {
  readonly graceMs: number;
}

export interface Verification {
  /** The domain row with the new state. */
  readonly domain: CustomerDomainRow;
  readonly checks: readonly DomainCheck[];
  readonly checkedAt: Date;
}

export interface DomainVerifierDeps {
  readonly db: Database;
  /** An uncaching resolver. */
  readonly resolver: DnsResolver;
  readonly settings: VerificationSettings;
  readonly now?: () => Date;
}

export type DomainVerifier = ReturnType<typeof createDomainVerifier>;

export function createDomainVerifier(deps: DomainVerifierDeps) {
  const { resolver, settings } = deps;
  const now = deps.now ?? (() => new Date());

  return {
    /** Checks the domain's records now and records the outcome; undefined when the domain no longer exists. */
    async verify(domainId: string): Promise<Verification | undefined> {
      const store = systemStore(deps.db);
      const row = await store.findOne(CustomerDomain, domainId);
      if (!row) return undefined;
      const [ownership, mx, dkim, spf] = await Promise.all([
        resolver.lookup(ownershipName(row), "TXT"),
        resolver.lookup(row.domain, "MX"),
        resolver.lookup(dkimName(row), "TXT"),
        resolver.lookup(row.domain, "TXT"),
      ]);
      const looked = evaluateChecks(row, settings, { ownership, mx, dkim, spf });
      return store.transactional(async (tx) => {
        // Lock order: the domain name first, then the row; every verification takes them in this order.
        await tx.lockName(row.domain);
        const locked = await tx.findOne(CustomerDomain, domainId, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (!locked) return undefined;
        const checkedAt = now();
        const checks = await exclusive(tx, locked, looked, checkedAt);
        locked.inbound = nextCapability(locked.inbound, outcomeFor(checks, "inbound"), checkedAt, settings.graceMs);
        locked.outbound = nextCapability(locked.outbound, outcomeFor(checks, "outbound"), checkedAt, settings.graceMs);
        locked.lastChecks = [...checks];
        locked.lastCheckedAt = locked.updatedAt = checkedAt;
        await tx.flush();
        return { domain: locked, checks, checkedAt };
      });
    },
  };
}

/**
 * A domain verifies for one organization at a time: inbound mail for it must reach one tenant. Several may
 * register it (an unverified claim must not block the real owner); if the DNS owner publishes another
 * organization's token while one still holds a capability, ownership fails for the newcomer until that lapses.
 * Telling it so reveals nothing to anyone but the domain's owner, who just proved ownership.
 */
async function exclusive(
  store: SystemStore,
  domain: CustomerDomainRow,
  checks: DomainCheck[],
  now: Date,
): Promise<DomainCheck[]> {
  const ownership = checks.find((c) => c.name === "ownership");
  if (ownership?.status !== "passed") return checks;
  const others = await store.find(CustomerDomain, { domain: domain.domain, id: { $ne: domain.id } });
  const holder = others.find((o) => o.organization.id !== domain.organization.id && (isEnabled(o.inbound, now) || isEnabled(o.outbound, now)));
  if (!holder) return checks;
  return checks.map((c) =>
    c === ownership ? { ...c, status: "failed", detail: "the token is published, but another organization holds this domain's verification" } : c,
  );
}
