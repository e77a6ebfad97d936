// The tenant access profile of GET /v1/me, read fresh (not from the key cache) so counters are current.
import type { Principal } from "../auth/principal.js";
import { Organization } from "../db/entities/index.js";
import type { OrganizationRow } from "../db/entities/organization.js";
import type { TenantStore } from "../db/tenant-store.js";

export interface AccessProfile {
  readonly organization: OrganizationRow;
  readonly principal: Principal;
  readonly managedStarter: { limit: number; used: number; remaining: number };
}

export async function readAccessProfile(store: TenantStore, principal: Principal): Promise<AccessProfile> {
  const organization = await store.em.findOneOrFail(Organization, store.organizationId);
  const { managedLimit: limit, managedUsed: used } = organization;
  return { organization, principal, managedStarter: { limit, used, remaining: Math.max(0, limit - used) } };
}
