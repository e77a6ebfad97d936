// `mailbox admin …`: organizations and API keys, changed straight in the database.
import { describeKey, issueKey, listKeys, revokeKey, rotateKey, SEND_MODES, updateKey, type KeyRestrictions } from "../admin/api-keys.js";
import {
  createOrganization,
  listOrganizations,
  ORGANIZATION_STATUSES,
  updateOrganization,
  type OrganizationLimits,
} from "../admin/organizations.js";
import { HOLD_POLICIES } from "../auth/principal.js";
import { parseScopes } from "../auth/scopes.js";
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import { UsageError } from "./usage-error.js";
import type { Flags } from "./flags.js";

/** What the command prints: the organization, key or list it created, changed or read. */
export async function admin(db: Database, config: Config, command: string, flags: Flags): Promise<unknown> {
  const em = db.fork();
  switch (command) {
    case "org create":
      return createOrganization(em, config.defaults, { name: required(flags.name, "--name"), ...limitsOf(flags) });
    case "org update":
      return updateOrganization(em, required(flags.id, "--id"), {
        ...limitsOf(flags),
        name: flags.name,
        status: oneOf(flags.status, ORGANIZATION_STATUSES, "--status"),
      });
    case "org list":
      return listOrganizations(em);
    case "key issue": {
      const { key, secret } = await issueKey(em, config.defaults, required(flags.org, "--org"), {
        ...restrictionsOf(flags),
        scopes: parseScopes(required(flags.scopes, "--scopes")),
      });
      return { ...describeKey(key), secret };
    }
    case "key update":
      return describeKey(await updateKey(em, required(flags.id, "--id"), restrictionsOf(flags)));
    case "key rotate": {
      const { key, secret } = await rotateKey(em, required(flags.id, "--id"), config.keyRotationOverlapMs);
      return { ...describeKey(key), secret };
    }
    case "key revoke":
      return describeKey(await revokeKey(em, required(flags.id, "--id")));
    case "key list":
      return (await listKeys(em, required(flags.org, "--org"))).map(describeKey);
    default:
      throw new UsageError(`unknown command "admin ${command}"`);
  }
}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value === "") throw new UsageError(`${flag} is required`);
  return value;
}

function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], flag: string): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) throw new UsageError(`${flag} must be one of ${allowed.join(", ")}`);
  return value as T;
}

function count(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`${flag} must be a whole number`);
  return n;
}

/** A comma list; an empty value clears the restriction (null). */
function list(value: string | undefined): string[] | null | undefined {
  if (value === undefined) return undefined;
  const items = value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  return items.length === 0 ? null : items;
}

function limitsOf(flags: Flags): OrganizationLimits {
  return {
    managedLimit: count(flags["managed-limit"], "--managed-limit"),
    messagesPerMinute: count(flags["messages-per-minute"], "--messages-per-minute"),
    messagesPerDay: count(flags["messages-per-day"], "--messages-per-day"),
    recipientsPerDay: count(flags["recipients-per-day"], "--recipients-per-day"),
    holdFor: oneOf(flags["hold-for"], HOLD_POLICIES, "--hold-for"),
  };
}

function restrictionsOf(flags: Flags): KeyRestrictions {
  const expires = flags["expires-at"];
  let expiresAt: Date | null | undefined;
  if (expires !== undefined) {
    expiresAt = expires === "" ? null : new Date(expires);
    if (expiresAt !== null && Number.isNaN(expiresAt.getTime())) throw new UsageError("--expires-at must be an ISO 8601 time");
  }
  return {
    scopes: flags.scopes === undefined ? undefined : parseScopes(flags.scopes),
    inboxIds: list(flags["inbox-ids"]),
    allowedIps: list(flags["allowed-ips"]),
    sendMode: oneOf(flags["send-mode"], SEND_MODES, "--send-mode"),
    allowedRecipientDomains: list(flags["recipient-domains"]),
    expiresAt,
    requestsPerMinute: count(flags["requests-per-minute"], "--requests-per-minute"),
    // An empty value gives the key back to its organization's policy.
    holdFor: flags["hold-for"] === "" ? null : oneOf(flags["hold-for"], HOLD_POLICIES, "--hold-for"),
  };
}
