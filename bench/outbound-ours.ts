// Our side of the outbound benchmark: the embedded stack (PostgreSQL and the Temporal dev server as bench/stack.ts
// starts them), one organization with inboxes and one key (bench/seed.ts, send limits raised so they never
// throttle the bench), and the api, worker and smtp roles each in its own process (`mailbox serve --role …`).
// SMTP_ROUTES sends the sink's domain to the bench sink; DELIVERY_RETRY_INITIAL shortens the first retry of a
// deferred recipient (the deferral run) the way the Postfix peer's minimal_backoff_time is shortened.
import { join } from "node:path";
import pg from "pg";
import type { Config } from "../src/config.js";
import { startRole, type RoleProcess } from "./inbound-ours.js";
import { pidByCommandLine } from "./processes.js";
import { seed } from "./seed.js";
import { startInfrastructure, type Infrastructure, type InfrastructureOptions, type Teardown, roleEnv as baseRoleEnv } from "./stack.js";

/** Send limits of the bench organization and of new organizations (env of the roles): nothing throttles a run. */
export const RAISED_LIMITS = {
  DEFAULT_MESSAGES_PER_MINUTE: 1_000_000,
  DEFAULT_MESSAGES_PER_DAY: 100_000_000,
  DEFAULT_RECIPIENTS_PER_DAY: 100_000_000,
  DEFAULT_REQUESTS_PER_MINUTE: 10_000_000,
} as const;

/** The configuration's defaults with RAISED_LIMITS, for the seeded organization. */
export function raisedDefaults(config: Config): Config["defaults"] {
  return {
    ...config.defaults,
    messagesPerMinute: RAISED_LIMITS.DEFAULT_MESSAGES_PER_MINUTE,
    messagesPerDay: RAISED_LIMITS.DEFAULT_MESSAGES_PER_DAY,
    recipientsPerDay: RAISED_LIMITS.DEFAULT_RECIPIENTS_PER_DAY,
    requestsPerMinute: RAISED_LIMITS.DEFAULT_REQUESTS_PER_MINUTE,
  };
}

export interface OurOutboundStack {
  readonly infra: Infrastructure;
  readonly api: RoleProcess;
  readonly worker: RoleProcess;
  readonly smtp: RoleProcess;
  readonly apiUrl: string;
  readonly apiKey: string;
  readonly inboxIds: readonly string[];
  readonly temporalPid: number | undefined;
  readonly roleEnv: Readonly<Record<string, string>>;
  readonly db: pg.Client;
  /** A connection of its own for sampling pg_stat_activity during runs. */
  readonly sampler: pg.Client;
}

export interface OurOutboundOptions {
  readonly workDir: string;
  readonly config: Config;
  readonly inboxes: number;
  readonly sinkDomain: string;
  readonly sinkPort: number;
  /** DELIVERY_RETRY_INITIAL of the worker, e.g. `2s`. */
  readonly retryInitial: string;
  readonly log: (line: string) => void;
  /** Node options per role (e.g. --cpu-prof). */
  readonly nodeArgs?: Partial<Record<"api" | "worker" | "smtp", readonly string[]>>;
  /** How PostgreSQL and Temporal are started (bench:faults restarts them). */
  readonly infrastructure?: InfrastructureOptions;
}

export async function startOurOutboundStack(options: OurOutboundOptions, teardown: Teardown): Promise<OurOutboundStack> {
  const { workDir, config, log } = options;
  log("starting PostgreSQL and Temporal …");
  const infra = await startInfrastructure(workDir, teardown, options.infrastructure);
  log(`seeding 1 organization × ${options.inboxes} inboxes …`);
  const [apiKey] = await seed(infra.databaseUrl, {
    organizations: 1,
    inboxesPerOrganization: options.inboxes,
    managedDomain: config.managedDomain,
    defaults: raisedDefaults(config),
  });
  const roleEnv: Record<string, string> = {
    ...baseRoleEnv(infra),
    SMTP_ROUTES: `${options.sinkDomain}=127.0.0.1:${options.sinkPort}`,
    DELIVERY_RETRY_INITIAL: options.retryInitial,
    ...Object.fromEntries(Object.entries(RAISED_LIMITS).map(([k, v]) => [k, String(v)])),
  };
  log("starting the api, worker and smtp roles …");
  const [api, worker, smtp] = await Promise.all(
    (["api", "worker", "smtp"] as const).map((role) =>
      startRole(role, { ...roleEnv, DATA_DIR: join(workDir, role) }, workDir, teardown, options.nodeArgs?.[role] ?? []),
    ),
  );
  const db = new pg.Client({ connectionString: infra.databaseUrl });
  await db.connect();
  teardown.add(() => db.end());
  const sampler = new pg.Client({ connectionString: infra.databaseUrl });
  await sampler.connect();
  teardown.add(() => sampler.end());
  const { rows } = await db.query<{ id: string }>(`select id from inboxes where status = 'active' order by address`);
  return {
    infra,
    api: api!,
    worker: worker!,
    smtp: smtp!,
    apiUrl: api!.summary.api!,
    apiKey: apiKey!,
    inboxIds: rows.map((r) => r.id),
    temporalPid: pidByCommandLine(["start-dev", infra.temporalAddress.split(":").pop()!]),
    roleEnv,
    db,
    sampler,
  };
}

export interface SubmissionView {
  readonly status: string;
  readonly recipients: readonly { readonly email: string; readonly status: string; readonly response: string | null }[];
}

/** GET /v1/submissions/{id}; null when it answers anything but 200. */
export async function getSubmission(stack: OurOutboundStack, id: string): Promise<SubmissionView | null> {
  const res = await fetch(`${stack.apiUrl}/v1/submissions/${id}`, { headers: { "x-api-key": stack.apiKey } });
  if (res.status !== 200) return null;
  const json = (await res.json()) as { submission?: SubmissionView } & Partial<SubmissionView>;
  return json.submission ?? (json.status ? (json as SubmissionView) : null);
}
