// The tenant access profile of GET /v1/me, read fresh (not from the key cache) so counters are current. One plain
// statement: the ORM's entity hydration cost more than the read itself on this, the most frequent call (bench:api).
import type { Principal } from "../auth/principal.js";
import type { OrganizationRow } from "../db/entities/organization.js";
import type { TenantStore } from "../db/tenant-store.js";
import { NotFound } from "../errors.js";

export interface AccessProfile {
  readonly organization: Pick<OrganizationRow, "id" | "status" | "messagesPerMinute" | "messagesPerDay" | "recipientsPerDay" | "holdFor">;
  readonly principal: Principal;
  readonly managedStarter: { limit: number; used: number; remaining: number };
}

interface OrganizationProfileRow {
  readonly id: string;
  readonly status: string;
  readonly messages_per_minute: number;
  readonly messages_per_day: number;
  readonly recipients_per_day: number;
  readonly managed_limit: number;
  readonly managed_used: number;
  readonly hold_for: string;
}

export async function readAccessProfile(store: TenantStore, principal: Principal): Promise<AccessProfile> {
  const [row] = await store.sqlRead<OrganizationProfileRow>((organizationId) => ({
    text: `select id, status, messages_per_minute, messages_per_day, recipients_per_day, managed_limit, managed_used, hold_for
             from organizations where id = $1`,
    values: [organizationId],
  }));
  if (!row) throw new NotFound("organization not found");
  const { managed_limit: limit, managed_used: used } = row;
  return {
    organization: {
      id: row.id,
      status: row.status,
      messagesPerMinute: row.messages_per_minute,
      messagesPerDay: row.messages_per_day,
      recipientsPerDay: row.recipients_per_day,
      holdFor: row.hold_for,
    },
    principal,
    managedStarter: { limit, used, remaining: Math.max(0, limit - used) },
  };
}
