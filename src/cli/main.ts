// The `mailbox` command. Operator commands print JSON on stdout; logs go to stderr.
import { flushCompileCache } from "node:module";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import type { Role } from "../main.js";
import { runsFromBuild } from "../runtime/sibling-module.js";
import { FLAGS } from "./flags.js";
import { UsageError } from "./usage-error.js";

// Each command imports what it needs when it runs: `--help` loads nothing more, operator commands the database and
// their own module, and only `start` and `serve` the whole service.

const USAGE = `mailbox <command>

  start                              database, Temporal, API, worker and SMTP, embedded defaults
  serve --role api|worker|smtp       one role against DATABASE_URL and TEMPORAL_ADDRESS
  worker                             same as serve --role worker
  migrate                            apply committed migrations
  migrate create [--name N]          generate a migration from the entities (development)
  dkim-record                        the managed domain's DKIM TXT record to publish (generates the key if needed)
  mcp                                MCP over stdio, relayed to MAILBOX_URL/mcp with MAILBOX_API_KEY
  admin org create --name N [--managed-limit N] [--messages-per-minute N] [--messages-per-day N] [--recipients-per-day N]
                  [--hold-for none|first_contact|new_domain|all]
  admin org update --id ORG_ID [--name N] [--status active|suspended] [limit flags] [--hold-for …]
  admin org list
  admin key issue --org ORG_ID --scopes a,b|* [--inbox-ids ..] [--allowed-ips ..] [--send-mode new_and_reply|reply_only]
                  [--recipient-domains ..] [--expires-at ISO] [--requests-per-minute N]
                  [--hold-for none|first_contact|new_domain|all]   (an empty --hold-for: the organization's)
  admin key update --id KEY_ID [restriction flags; an empty list value clears the restriction]
  admin key rotate --id KEY_ID       new secret; the old one works for KEY_ROTATION_OVERLAP_S more seconds
  admin key revoke --id KEY_ID
  admin key list --org ORG_ID`;

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
  const { ConfigError, loadConfig } = await import("../config.js");
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
          // A development command: the migration goes into the sources, also when this runs from the build in dist/.
          const sources = fileURLToPath(new URL(runsFromBuild(import.meta.url) ? "../../../src/db/migrations" : "../db/migrations", import.meta.url));
          const result = await db.orm.migrator.create(sources, false, false, flags.name);
          return { fileName: result.fileName || null, changed: result.diff.up.length > 0 };
        });
      case "dkim-record": {
        const { managedDkimRecord } = await import("../outbound/delivery/managed-dkim.js");
        console.log(JSON.stringify(await managedDkimRecord(config), null, 2));
        return 0;
      }
      // stdout carries the protocol: nothing else may be printed on it.
      case "mcp": {
        const { runStdioBridge } = await import("../mcp/stdio-bridge.js");
        await runStdioBridge({ ...config.mcpBridge, warn: (message) => console.error(message) });
        return 0;
      }
      default:
        if (positionals[0] === "admin") {
          const { admin } = await import("./admin.js");
          return await withDatabase(config, (db) => admin(db, config, positionals.slice(1).join(" "), flags));
        }
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(e.message);
      return 2;
    }
    return fail(e);
  }
}

function fail(e: unknown): number {
  if (e instanceof UsageError) {
    console.error(`${e.message}\n\n${USAGE}`);
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
  const { startService } = await import("../main.js");
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
  // Node writes its compile cache (src/cli/mailbox.js) at exit, which a process killed with SIGKILL never reaches:
  // written now, every module the boot loaded is cached for the next one.
  flushCompileCache();
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  // The drain is bounded by its parts' graces; this bounds what none of them foresaw (a hung close).
  setTimeout(() => {
    console.error(`error: shutdown took longer than SHUTDOWN_TIMEOUT_MS (${config.shutdownTimeoutMs} ms), exiting`);
    process.exit(1);
  }, config.shutdownTimeoutMs).unref();
  await service.stop();
  return 0;
}

async function withDatabase(config: Config, fn: (db: Database) => Promise<unknown>): Promise<number> {
  const { openOperatorDatabase } = await import("../runtime/operator-database.js");
  const { db, close } = await openOperatorDatabase(config);
  try {
    console.log(JSON.stringify(await fn(db), null, 2));
    return 0;
  } finally {
    await close();
  }
}
