// Bench data: organizations with inboxes (bulk SQL in the real schema) and one real API key each (issueKey).
import pg from "pg";
import { issueKey } from "../src/admin/api-keys.js";
import type { Config } from "../src/config.js";
import { migrateDatabase, openDatabase } from "../src/db/database.js";

export interface SeedPlan {
  readonly organizations: number;
  readonly inboxesPerOrganization: number;
  readonly managedDomain: string;
  readonly defaults: Config["defaults"];
}

/** High enough that no key is throttled during a run, low enough for the `requests_per_minute` int column. */
const BENCH_REQUESTS_PER_MINUTE = 10_000_000;
/** Concurrent issueKey calls while seeding. */
const KEY_ISSUERS = 8;
/** How far back the seeded inboxes' creation times reach. */
const HISTORY_MS = 90 * 86_400_000;

/** Applies migrations and seeds; returns one key secret per organization. */
export async function seed(databaseUrl: string, plan: SeedPlan): Promise<string[]> {
  const db = await openDatabase(databaseUrl, { poolMax: KEY_ISSUERS });
  try {
    await migrateDatabase(db);
    // A tag per run keeps organization names and inbox addresses unique on a reused external database.
    const tag = `bench${Date.now().toString(36)}`;
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const organizationIds = await insertOrganizations(client, tag, plan);
      await insertInboxes(client, tag, organizationIds, plan);
      const secrets = await issueKeys(organizationIds, (id) =>
        issueKey(db.fork(), plan.defaults, id, { scopes: ["*"], requestsPerMinute: BENCH_REQUESTS_PER_MINUTE }),
      );
      // Fresh statistics, as autovacuum would have them on a database that grew to this size.
      await client.query("vacuum analyze organizations, inboxes, api_keys");
      return secrets;
    } finally {
      await client.end();
    }
  } finally {
    await db.close();
  }
}

async function insertOrganizations(client: pg.Client, tag: string, plan: SeedPlan): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    `insert into organizations (id, name, status, messages_per_minute, messages_per_day, recipients_per_day,
                                managed_limit, managed_used, created_at, updated_at)
     select gen_random_uuid(), $1::text || '-' || n, 'active', $2::int, $3::int, $4::int, $5::int + $6::int, $6::int, t, t
     from generate_series(1, $7::int) as n,
          lateral (select now() - interval '120 days' + n * interval '1 second' as t) as created
     returning id`,
    [tag, plan.defaults.messagesPerMinute, plan.defaults.messagesPerDay, plan.defaults.recipientsPerDay,
      plan.defaults.managedLimit, plan.inboxesPerOrganization, plan.organizations],
  );
  return rows.map((r) => r.id);
}

/**
 * Inboxes interleaved over the last 90 days: row k of the whole set gets its own slot of HISTORY_MS / total and a
 * random millisecond inside it, so creation times are distinct and every organization's span the whole history.
 */
async function insertInboxes(client: pg.Client, tag: string, organizationIds: readonly string[], plan: SeedPlan): Promise<void> {
  const total = organizationIds.length * plan.inboxesPerOrganization;
  const slotMs = Math.floor(HISTORY_MS / total);
  await client.query(
    `insert into inboxes (id, organization_id, local_part, domain, address, domain_kind, domain_id, display_name,
                          status, created_at, updated_at, deleted_at)
     select 'inb_' || substr(md5(random()::text || org.n || '/' || i), 1, 24), org.id, lp, $2::text, lp || '@' || $2::text,
            'managed', null, 'Agent ' || org.n || '.' || i, 'active', t, t, null
     from unnest($3::uuid[]) with ordinality as org(id, n),
          generate_series(1, $4::int) as i,
          lateral (select $1::text || '-' || org.n || '-' || i as lp,
                          now() - interval '1 millisecond' *
                            (((i - 1) * cardinality($3::uuid[]) + org.n) * $5::bigint + floor(random() * $5)) as t) as v`,
    [tag, plan.managedDomain, organizationIds, plan.inboxesPerOrganization, slotMs],
  );
}

async function issueKeys(organizationIds: readonly string[], issue: (id: string) => Promise<{ secret: string }>): Promise<string[]> {
  const secrets: string[] = new Array(organizationIds.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < organizationIds.length; i = next++) secrets[i] = (await issue(organizationIds[i]!)).secret;
  };
  await Promise.all(Array.from({ length: KEY_ISSUERS }, worker));
  return secrets;
}
