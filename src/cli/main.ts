// The `mailbox` command. Operator commands print JSON on stdout; logs go to stderr.
import { parseArgs } from "node:util";
import { describeKey, issueKey, listKeys, revokeKey, rotateKey, SEND_MODES, updateKey, type KeyRestrictions } from "../admin/api-keys.js";
import {
  createOrganization,
  listOrganizations,
  ORGANIZATION_STATUSES,
  updateOrganization,
  type OrganizationLimits,
} from "../admin/organizations.js";
import { parseScopes } from "../auth/scopes.js";
import { ConfigError, loadConfig, type Config } from "../config.js";
import { MIGRATIONS_DIR } from "../db/database.js";
import { openOperatorDatabase, startService, type Role } from "../main.js";
import { runStdioBridge } from "../mcp/stdio-bridge.js";
import { managedDkimRecord } from "../outbound/delivery/managed-dkim.js";

const USAGE = `mailbox <command>

  start                              database, Temporal, API, worker and SMTP, embedded defaults
  serve --role api|worker|smtp       one role against DATABASE_URL and TEMPORAL_ADDRESS
  worker                             same as serve --role worker
  migrate                            apply committed migrations
  migrate create [--name N]          generate a migration from the entities (development)
  dkim-record                        the managed domain's DKIM TXT record to publish (generates the key if needed)
  mcp                                MCP over stdio, relayed to MAILBOX_URL/mcp with MAILBOX_API_KEY
  admin org create --name N [--managed-limit N] [--messages-per-minute N] [--messages-per-day N] [--recipients-per-day N]
  admin org update --id ORG_ID [--name N] [--status active|suspended] [limit flags]
  admin org list
  admin key issue --org ORG_ID --scopes a,b|* [--inbox-ids ..] [--allowed-ips ..] [--send-mode new_and_reply|reply_only]
                  [--recipient-domains ..] [--expires-at ISO] [--requests-per-minute N]
  admin key update --id KEY_ID [restriction flags; an empty list value clears the restriction]
  admin key rotate --id KEY_ID       new secret; the old one works for KEY_ROTATION_OVERLAP_S more seconds
  admin key revoke --id KEY_ID
  admin key list --org ORG_ID`;

class UsageError extends Error {}

const FLAGS = {
  role: { type: "string" },
  name: { type: "string" },
  id: { type: "string" },
  org: { type: "string" },
  status: { type: "string" },
  scopes: { type: "string" },
  "managed-limit": { type: "string" },
  "messages-per-minute": { type: "string" },
  "messages-per-day": { type: "string" },
  "recipients-per-day": { type: "string" },
  "inbox-ids": { type: "string" },
  "allowed-ips": { type: "string" },
  "send-mode": { type: "string" },
  "recipient-domains": { type: "string" },
  "expires-at": { type: "string" },
  "requests-per-minute": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

type Flags = ReturnType<typeof parseArgs<{ options: typeof FLAGS; allowPositionals: true }>>["values"];

export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: FLAGS, allowPositionals: true, strict: true });
  } catch (e) {
    return fail(new UsageError((e as Error).message));
  }
  const { values: flags, positionals } = parsed;
  if (flags.help || positionals.length === 0) {
    console.log(USAGE);
    return flags.help ? 0 : 2;
  }
  try {
    const config = loadConfig();
    const command = positionals.join(" ");
    switch (command) {
      case "start":
        return await serveUntilSignal(config, ["api", "worker", "smtp"], true);
      case "serve":
        return await serveUntilSignal(config, [roleOf(flags.role)], false);
      case "worker":
        return await serveUntilSignal(config, ["worker"], false);
      case "migrate":
        return await withDatabase(config, async () => ({ migrated: true }));
      case "migrate create":
        return await withDatabase(config, async (db) => {
          const result = await db.orm.migrator.create(MIGRATIONS_DIR, false, false, flags.name);
          return { fileName: result.fileName || null, changed: result.diff.up.length > 0 };
        });
      case "dkim-record":
        console.log(JSON.stringify(await managedDkimRecord(config), null, 2));
        return 0;
      // stdout carries the protocol: nothing else may be printed on it.
      case "mcp":
        await runStdioBridge({ ...config.mcpBridge, warn: (message) => console.error(message) });
        return 0;
      default:
        if (positionals[0] === "admin") return await admin(config, positionals.slice(1).join(" "), flags);
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (e) {
    return fail(e);
  }
}

function fail(e: unknown): number {
  if (e instanceof UsageError) {
    console.error(`${e.message}\n\n${USAGE}`);
    return 2;
  }
  if (e instanceof ConfigError) {
    console.error(e.message);
    return 2;
  }
  console.error(`error: ${e instanceof Error ? e.message : String(e)}`);
  return 1;
}

function roleOf(role: string | undefined): Role {
  if (role === "api" || role === "worker" || role === "smtp") return role;
  throw new UsageError("--role must be api, worker or smtp");
}

async function serveUntilSignal(config: Config, roles: Role[], embedded: boolean): Promise<number> {
  const service = await startService(config, roles, { embedded });
  const summary = {
    api: service.api ? `http://${config.bindHost}:${service.api.port}` : null,
    smtp: service.smtp ? `${config.bindHost}:${service.smtp.port}` : null,
    status: service.statusPort === undefined ? null : `http://${config.bindHost}:${service.statusPort}`,
    roles,
    temporal: service.temporalAddress,
    temporalUi: service.temporalUiUrl,
    database: service.databaseUrl.replace(/\/\/[^@]*@/, "//"),
  };
  console.log(JSON.stringify(summary));
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await service.stop();
  return 0;
}

type OperatorDb = Awaited<ReturnType<typeof openOperatorDatabase>>["db"];

async function withDatabase(config: Config, fn: (db: OperatorDb) => Promise<unknown>): Promise<number> {
  const { db, close } = await openOperatorDatabase(config);
  try {
    console.log(JSON.stringify(await fn(db), null, 2));
    return 0;
  } finally {
    await close();
  }
}

function admin(config: Config, command: string, flags: Flags): Promise<number> {
  return withDatabase(config, async (db) => {
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
  });
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
  };
}
