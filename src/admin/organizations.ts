// Operator actions on organizations. Not part of the public API: the `mailbox admin org` commands call these.
import type { EntityManager } from "@mikro-orm/postgresql";
import type { HoldPolicy } from "../auth/principal.js";
import type { Config } from "../config.js";
import { Organization } from "../db/entities/index.js";
import type { OrganizationRow } from "../db/entities/organization.js";
import { newUuid } from "../ids.js";

export interface OrganizationLimits {
  managedLimit?: number;
  messagesPerMinute?: number;
  messagesPerDay?: number;
  recipientsPerDay?: number;
  /** Which of the organization's sends wait for a person's decision (a key's own policy wins). */
  holdFor?: HoldPolicy;
}

export const ORGANIZATION_STATUSES = ["active", "suspended"] as const;

export async function createOrganization(
  em: EntityManager,
  defaults: Config["defaults"],
  input: { name: string } & OrganizationLimits,
): Promise<OrganizationRow> {
  const now = new Date();
  const org = em.create(Organization, {
    id: newUuid(),
    name: input.name,
    status: "active",
    managedLimit: input.managedLimit ?? defaults.managedLimit,
    managedUsed: 0,
    messagesPerMinute: input.messagesPerMinute ?? defaults.messagesPerMinute,
    messagesPerDay: input.messagesPerDay ?? defaults.messagesPerDay,
    recipientsPerDay: input.recipientsPerDay ?? defaults.recipientsPerDay,
    holdFor: input.holdFor ?? "none",
    createdAt: now,
    updatedAt: now,
  });
  await em.flush();
  return org;
}

export async function updateOrganization(
  em: EntityManager,
  id: string,
  changes: { status?: (typeof ORGANIZATION_STATUSES)[number]; name?: string } & OrganizationLimits,
): Promise<OrganizationRow> {
  const org = await em.findOneOrFail(Organization, id);
  em.assign(org, { ...definedOnly(changes), updatedAt: new Date() });
  await em.flush();
  return org;
}

export function listOrganizations(em: EntityManager): Promise<OrganizationRow[]> {
  return em.find(Organization, {}, { orderBy: { createdAt: "asc" } });
}

export function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
