// The capability checks other features call before they use a customer domain: inbound SMTP admission (RCPT),
// sending (inbox send, reply, /v1/send) and inbox creation. A domain whose last check is older than the refresh
// age, or whose grace period has run out, is re-checked first (spec, States rule 3); one re-check per domain runs
// at a time in a process, whatever the number of callers waiting on it.
import type { Database } from "../db/database.js";
import { systemStore } from "../db/system-store.js";
import { CustomerDomain } from "../db/entities/index.js";
import type { CapabilityRecord, CustomerDomainRow } from "../db/entities/customer-domain.js";
import type { TenantStore } from "../db/tenant-store.js";
import { toAsciiDomain } from "../dns/names.js";
import { NotFound, PermissionDenied } from "../errors.js";
import { isEnabled, nextCheckDue } from "./capability-state.js";
import { outcomeFor, type Capability, type DomainCheck } from "./checks.js";
import type { DomainVerifier } from "./verifier.js";

export interface CapabilitiesDeps {
  readonly db: Database;
  readonly verifier: DomainVerifier;
  readonly refreshMs: number;
  readonly now?: () => Date;
}

/** Whether inbound mail for a customer domain is admitted, for the organization that holds it. */
export interface InboundDomainStatus {
  readonly organizationId: string;
  readonly domainId: string;
  readonly admitted: boolean;
  /**
   * For a refusal: true when DNS failures outlasted the grace period (the records may be fine: answer SMTP 450),
   * false when the records are missing or wrong or were never verified (answer 550).
   */
  readonly temporary: boolean;
  /** A sentence for the SMTP reply or the API error. */
  readonly reason: string;
}

/** The 403 code of every refusal to use a customer domain whose capability is not verified. */
export const DOMAIN_NOT_VERIFIED = "domain_not_verified";

export type DomainCapabilities = ReturnType<typeof createDomainCapabilities>;

export function createDomainCapabilities(deps: CapabilitiesDeps) {
  const now = deps.now ?? (() => new Date());
  const rechecks = new Map<string, Promise<CustomerDomainRow>>();

  /** The row, re-checked first when it is due and the capability was ever verified (else only verify helps). */
  function current(row: CustomerDomainRow, capability: Capability): Promise<CustomerDomainRow> {
    const record = row[capability];
    if (record.lastSuccessAt === null || nextCheckDue(row, deps.refreshMs) > now()) return Promise.resolve(row);
    let running = rechecks.get(row.id);
    if (!running) {
      running = (async () => {
        // The row may have been read before another re-check committed: only a row still due is checked.
        const latest = (await systemStore(deps.db).findOne(CustomerDomain, row.id)) ?? row;
        if (nextCheckDue(latest, deps.refreshMs) > now()) return latest;
        return (await deps.verifier.verify(row.id))?.domain ?? latest;
      })().finally(() => rechecks.delete(row.id));
      rechecks.set(row.id, running);
    }
    return running;
  }

  function statusOf(row: CustomerDomainRow, capability: Capability): { enabled: boolean; temporary: boolean; reason: string } {
    const record: CapabilityRecord = row[capability];
    const at = now();
    const checks = (row.lastChecks ?? []) as DomainCheck[];
    if (isEnabled(record, at)) {
      return record.state === "grace"
        ? { enabled: true, temporary: false, reason: `DNS lookups for ${row.domain} fail for now; ${capability} stays verified until ${record.graceUntil}` }
        : { enabled: true, temporary: false, reason: `${capability} mail is verified for ${row.domain}` };
    }
    if (record.state === "unverified") {
      return { enabled: false, temporary: false, reason: `${row.domain} has not verified ${capability} mail yet` };
    }
    if (record.state === "grace" || outcomeFor(checks, capability) === "temporary") {
      return {
        enabled: false,
        temporary: true,
        reason: `the DNS records of ${row.domain} could not be checked and the grace period has ended; ${capability} mail is suspended until a verification succeeds`,
      };
    }
    const failed = checks.find((c) => c.gates.includes(capability) && c.status === "failed");
    return {
      enabled: false,
      temporary: false,
      reason: `${row.domain} no longer passes ${capability} verification${failed ? ` (${failed.name}: ${failed.detail})` : ""}`,
    };
  }

  return {
    /**
     * Inbound admission for a recipient domain (SMTP RCPT): undefined when no organization registered the domain.
     * When several did, the one that holds the verification answers (only one can: see the verifier).
     */
    async inboundDomainStatus(domain: string): Promise<InboundDomainStatus | undefined> {
      const ascii = toAsciiDomain(domain);
      if (!ascii.ok) return undefined;
      const rows = await systemStore(deps.db).find(CustomerDomain, { domain: ascii.domain }, { orderBy: { createdAt: "desc" } });
      const at = now();
      const chosen =
        rows.find((r) => isEnabled(r.inbound, at)) ??
        [...rows].sort((a, b) => (b.inbound.lastSuccessAt ?? "").localeCompare(a.inbound.lastSuccessAt ?? ""))[0];
      if (!chosen) return undefined;
      const row = await current(chosen, "inbound");
      const status = statusOf(row, "inbound");
      return { organizationId: row.organization.id, domainId: row.id, admitted: status.enabled, temporary: status.temporary, reason: status.reason };
    },

    /** Sending from a domain of the organization; 403 domain_not_verified unless its outbound capability holds. */
    async requireOutbound(organizationId: string, domain: string): Promise<{ readonly domainId: string; readonly domain: string }> {
      const ascii = toAsciiDomain(domain);
      const row = ascii.ok
        ? await systemStore(deps.db).findOne(CustomerDomain, { organization: organizationId, domain: ascii.domain })
        : null;
      if (!row) throw new PermissionDenied(`${domain} is not a verified domain of this organization`, DOMAIN_NOT_VERIFIED);
      const status = statusOf(await current(row, "outbound"), "outbound");
      if (!status.enabled) throw new PermissionDenied(`sending from ${row.domain} is refused: ${status.reason}`, DOMAIN_NOT_VERIFIED);
      return { domainId: row.id, domain: row.domain };
    },

    /**
     * The domain a new inbox goes on: 404 when it is not the organization's, 403 domain_not_verified unless its
     * inbound capability holds (an inbox receives mail, so inbound is what it needs).
     */
    async requireInboundForInbox(store: TenantStore, domainId: string): Promise<CustomerDomainRow> {
      const row = await store.findOne(CustomerDomain, { id: domainId });
      if (!row) throw new NotFound("domain");
      const status = statusOf(await current(row, "inbound"), "inbound");
      if (!status.enabled) {
        throw new PermissionDenied(`inboxes need a domain with verified inbound mail: ${status.reason}`, DOMAIN_NOT_VERIFIED);
      }
      return row;
    },
  };
}
