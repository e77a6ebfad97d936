// The delivery queue: committed submissions wait in PostgreSQL (status pending) until a worker claims them, makes
// their first attempts and hands what those leave open to their deliver/<submissionId> workflows. Both sides talk
// through PostgreSQL notifications:
//
// - Acceptance (the api role) announces each committed submission (SUBMISSIONS_ANNOUNCED, grouped) and makes no
//   Temporal call.
// - The worker's dispatcher keeps the announced ids in order and claims them in batches (pending → queued under a
//   lease, one statement that also reads what the attempts send; src/outbound/delivery/store.ts) while fewer than
//   DELIVERY_CONCURRENCY first attempts of its own run, and makes the first attempt to each domain itself. Only a
//   submission with recipients left open (deferred, or an attempt that could not be recorded) gets a workflow,
//   started on the worker's own connection with requestEagerStart (the server hands its first task straight back),
//   which waits each domain's backoff and retries. A workflow per message cost more CPU than all the rest of a
//   delivery together (bench:outbound's Temporal floor: an empty workflow ~33 ms on the dev server and the SDK,
//   against a target of 40 ms per message for everything), and most mail is delivered at the first attempt. What
//   it cannot take yet waits as pending, oldest first; once a second it reports how many wait, how long the oldest
//   has waited and how fast it claims (DELIVERY_BACKLOG_REPORTED).
// - DELIVERY_WORKFLOWS=all (for an operator who wants every delivery in the Temporal UI, at a workflow's cost per
//   message) starts each claimed submission's workflow at once instead, with what the claim queued; its first
//   attempt (a local activity on this worker, handed back by the eager start) frees the slot.
// - Held submissions (src/outbound/delivery/holds.ts) are never claimed: whatever the setting, the announcement
//   starts their workflow, which waits for the decision; an approved one is delivered by that workflow.
// - A claim is a lease (CLAIM_LEASE_MS) that its worker renews while it holds the submission without a workflow,
//   and ends when the submission is final or its workflow has started. Every worker of the task queue looks for
//   leases that ran out every TAKEOVER_INTERVAL_MS and starts their workflows (a start is idempotent by workflow
//   id), so a killed worker's claims are delivered by the others within seconds; the workflow queues the
//   submission itself and attempts what is open (one more copy at most, with the same Message-ID, of what the dead
//   worker sent and did not record).
// - Acceptance estimates how long a submission accepted now would wait for its first attempt — those waiting ahead
//   of it over the workers' claim rate, and at least the age of the oldest — and refuses sends (503
//   delivery_backlog, Retry-After) while that is past half of DELIVERY_BACKLOG_MAX_S (the other half covers the
//   reports' age and the sends in flight), so that what it accepted starts within the limit. The age of the oldest
//   alone was not enough: offered twice as fast as delivered, the newest waited twice as long (bench:outbound).
//
// Announcements carry the task queue and each submission records it, so a worker claims and takes over only work
// of its own queue (deployments and tests sharing one database keep to their own). A worker that starts, or listens
// again after losing its connection, takes up what waits pending for its queue (announced while it did not
// listen); what still slips through (a failed notification) the delivery reconciler starts
// (src/outbound/delivery/reconciler.ts).
import { randomBytes } from "node:crypto";
import type { DeliveryWorkflows } from "../../config.js";
import type { Database } from "../../db/database.js";
import { groupCommit } from "../../db/group-commit.js";
import { Unavailable } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { DeliveryQueue } from "../ports.js";
import { FIRST_ATTEMPT_BUDGET_MS, type Deliverer } from "./deliverer.js";
import type { QueuedSubmission } from "./operations.js";
import { heldAmong, heldStart } from "./holds.js";
import { claimSubmissions, pendingSubmissionIds, releaseClaims, renewClaims, takeOverExpiredClaims, type ClaimedSubmission } from "./store.js";

export const SUBMISSIONS_ANNOUNCED = "submissions_announced";
export const DELIVERY_BACKLOG_REPORTED = "delivery_backlog_reported";

/** Starts a submission's delivery workflow (deliver/<submissionId>); idempotent. */
export interface DeliveryStarter {
  start(submission: {
    readonly submissionId: string;
    readonly organizationId: string;
    readonly inboxId: string | null;
    /** What the claim queued; absent, the workflow queues the submission itself. */
    readonly queued?: QueuedSubmission;
    /** First attempts the delivery queue made itself, per domain: each domain's next one waits its backoff. */
    readonly attempted?: Readonly<Record<string, number>>;
    /** A held submission: its workflow waits for the decision first (src/outbound/delivery/holds.ts). */
    readonly held?: { readonly reason: string; readonly recipients: number };
  }): Promise<void>;
}

/** Ids per notification: a payload stays well under PostgreSQL's 8,000 bytes. */
const IDS_PER_NOTIFICATION = 150;
/** Claimed per statement at most. */
const CLAIM_BATCH = 100;
/** How often a dispatcher with waiting submissions reports its backlog. */
const REPORT_INTERVAL_MS = 1_000;
/** A report older than this is no longer believed (its worker stopped, or stopped reporting a backlog). */
const REPORT_FRESH_MS = 3_000;
/** The claim rate is measured over this window. */
const RATE_WINDOW_MS = 5_000;
/** Waiting ids looked up per report; beyond them, every waiting id is counted as pending. */
const REPORT_LOOKUP = 5_000;
/** Ids waiting in memory at most; beyond, announcements are dropped and the reconciler finds them pending. */
const MAX_WAITING = 100_000;
/**
 * A first attempt not reported ended by then frees its slot anyway: its workflow task went to another worker (no
 * eager slot here), or it failed before its attempt. A first attempt ends within FIRST_ATTEMPT_BUDGET_MS.
 */
const IN_FLIGHT_TTL_MS = FIRST_ATTEMPT_BUDGET_MS + 10_000;
/** How long a starting dispatcher waits for its LISTEN before it goes on without. */
const LISTEN_WAIT_MS = 5_000;
/** A claim that failed (the database) is tried again after this long. */
const CLAIM_RETRY_MS = 1_000;
/**
 * A claim's lease: renewed every TAKEOVER_INTERVAL_MS while its worker holds it, so it runs out only when the worker
 * is gone (or cannot reach the database for this long). With the interval it bounds how long a dead worker's
 * submissions wait: ~15 s.
 */
export const CLAIM_LEASE_MS = 12_000;
/** How often a worker renews its leases and looks for leases that ran out. */
const TAKEOVER_INTERVAL_MS = 2_000;
/** Claims taken over per look at most; the next look takes the rest. */
const TAKEOVER_BATCH = 100;

function announcement(taskQueue: string, ids: readonly string[]): string {
  return `${taskQueue}\t${ids.join(",")}`;
}

/** Acceptance's side: announcements after commit, and the backlog check before a send. */
export function createDeliveryQueue(deps: { db: Database; taskQueue: string; backlogMaxMs: number; log: Logger }): DeliveryQueue & { close(): Promise<void> } {
  const announce = groupCommit<string, void>(
    async (ids) => {
      const payloads: string[] = [];
      for (let i = 0; i < ids.length; i += IDS_PER_NOTIFICATION) payloads.push(announcement(deps.taskQueue, ids.slice(i, i + IDS_PER_NOTIFICATION)));
      await deps.db.sql.query("select pg_notify($1, p) from unnest($2::text[]) as p", [SUBMISSIONS_ANNOUNCED, payloads]);
      return ids.map(() => undefined);
    },
    { maxGroup: 1000, maxInFlight: 1 },
  );

  // The latest report of each worker of this task queue.
  const reports = new Map<string, BacklogReport & { at: number }>();
  const listener = deps.db.sql.listen(DELIVERY_BACKLOG_REPORTED, {
    notified(payload) {
      const [queue, worker, pending, oldestMs, claimsPerS] = payload.split("\t");
      if (queue !== deps.taskQueue || !worker) return;
      reports.set(worker, { pending: Number(pending) || 0, oldestMs: Number(oldestMs) || 0, claimsPerS: Number(claimsPerS) || 0, at: Date.now() });
    },
    listening: () => undefined,
    // Without reports nothing is refused: a worker that cannot report is no reason to stop accepting.
    lost: () => reports.clear(),
  });

  return {
    requireCapacity() {
      const now = Date.now();
      for (const [worker, r] of reports) if (now - r.at > REPORT_FRESH_MS) reports.delete(worker);
      const backlogMs = expectedWaitMs([...reports.values()]);
      if (backlogMs > deps.backlogMaxMs / 2) {
        throw new Unavailable(
          "delivery_backlog",
          `delivery is ${Math.round(backlogMs / 1000)} s behind (DELIVERY_BACKLOG_MAX_S is ${deps.backlogMaxMs / 1000}): retry later`,
          backlogMs / 1000,
        );
      }
    },
    announce(submissionId) {
      announce(submissionId).catch((e: unknown) =>
        deps.log.warn("submission not announced; the delivery reconciler will start it", { submissionId, error: e }),
      );
    },
    taskQueue: deps.taskQueue,
    close: () => listener.close(),
  };
}

/** What a worker reports: the submissions it sees waiting, the oldest one's wait, and the rate it claims them. */
export interface BacklogReport {
  readonly pending: number;
  readonly oldestMs: number;
  readonly claimsPerS: number;
}

/**
 * How long a submission accepted now would wait: every worker sees every announcement (so the most pending any
 * reports), and they claim together (the sum of their rates); never less than the oldest has waited already.
 */
export function expectedWaitMs(reports: readonly BacklogReport[]): number {
  let pending = 0;
  let oldestMs = 0;
  let claimsPerS = 0;
  for (const r of reports) {
    pending = Math.max(pending, r.pending);
    oldestMs = Math.max(oldestMs, r.oldestMs);
    claimsPerS += r.claimsPerS;
  }
  if (pending === 0) return 0;
  return Math.max(oldestMs, claimsPerS > 0 ? (pending / claimsPerS) * 1000 : oldestMs);
}

export interface DispatcherDeps {
  readonly db: Database;
  readonly taskQueue: string;
  /** First attempts of this worker in flight at most (DELIVERY_CONCURRENCY). */
  readonly capacity: number;
  /** The retry schedule handed to each workflow (from the worker's configuration). */
  readonly schedule: Pick<QueuedSubmission, "retryInitialMs" | "retryMaxMs" | "queueLifetimeMs">;
  /** Makes the first attempts of what this worker claims (the same deliverer as the worker's activities). */
  readonly deliverer: Pick<Deliverer, "firstAttempt">;
  /**
   * DELIVERY_WORKFLOWS: `deferred` makes the first attempts here and starts a workflow only for what they leave
   * open; `all` starts every claimed submission's workflow at once, which makes its first attempts itself.
   */
  readonly workflows: DeliveryWorkflows;
  readonly log: Logger;
}

export interface DeliveryDispatcher {
  /** A first attempt of a submission ended in this process: its slot is free. */
  firstAttemptEnded(submissionId: string): void;
  /**
   * Starts listening and dispatching with this starter (made on the worker's own connection); resolves once it
   * listens, or after LISTEN_WAIT_MS without (it goes on trying; the reconciler finds what it misses).
   */
  start(starter: DeliveryStarter): Promise<void>;
  /** Stops claiming and taking over; what it holds goes on until settled(). */
  stop(): Promise<void>;
  /**
   * Resolves once every submission it claimed is final or handed to its workflow (the worker's drain ends the
   * attempts first); its leases are renewed until then.
   */
  settled(): Promise<void>;
}

/** The worker's side: listens for announcements, claims and attempts within its capacity, reports its backlog. */
export function createDeliveryDispatcher(deps: DispatcherDeps): DeliveryDispatcher {
  return new Dispatcher(deps);
}

/** How many submissions were claimed in the last RATE_WINDOW_MS. */
class ClaimRate {
  private readonly claims: { at: number; n: number }[] = [];

  add(n: number): void {
    if (n > 0) this.claims.push({ at: Date.now(), n });
    this.forgetOld();
  }

  perSecond(): number {
    this.forgetOld();
    return this.claims.reduce((sum, c) => sum + c.n, 0) / (RATE_WINDOW_MS / 1000);
  }

  private forgetOld(): void {
    const since = Date.now() - RATE_WINDOW_MS;
    while (this.claims.length > 0 && this.claims[0]!.at < since) this.claims.shift();
  }
}

class Dispatcher implements DeliveryDispatcher {
  private readonly workerId = randomBytes(6).toString("hex");
  private readonly waiting: string[] = [];
  private readonly known = new Set<string>();
  /** First attempts of this process in flight: submission id → when its slot frees itself. */
  private readonly inFlight = new Map<string, number>();
  private readonly claimRate = new ClaimRate();
  /** Submissions claimed here and not yet final or handed to their workflow: their leases are renewed. */
  private readonly ownClaims = new Map<string, Promise<void>>();
  private starter: DeliveryStarter | undefined;
  private stopped = false;
  private pumping: Promise<void> | undefined;
  private listener: { close(): Promise<void> } | undefined;
  private reporter: NodeJS.Timeout | undefined;
  private leases: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private reportedBacklog = false;
  private tending = false;

  constructor(private readonly deps: DispatcherDeps) {}

  // A property, not a method: the worker passes it on unbound.
  readonly firstAttemptEnded = (submissionId: string): void => {
    if (this.inFlight.delete(submissionId)) this.pump();
  };

  async start(starter: DeliveryStarter): Promise<void> {
    this.starter = starter;
    let listening!: () => void;
    const listens = new Promise<void>((resolve) => (listening = resolve));
    this.listener = this.deps.db.sql.listen(SUBMISSIONS_ANNOUNCED, {
      notified: (payload) => {
        const tab = payload.indexOf("\t");
        if (tab < 0 || payload.slice(0, tab) !== this.deps.taskQueue) return;
        this.enqueue(payload.slice(tab + 1).split(","));
      },
      listening: () => {
        listening();
        void this.takeUpPending();
      },
      lost: () => this.deps.log.warn("delivery queue: not listening for announcements; what is missed is taken up when it listens again"),
    });
    this.reporter = setInterval(() => {
      this.report().catch((e: unknown) => this.deps.log.warn("delivery queue: backlog report failed", { error: e }));
    }, REPORT_INTERVAL_MS);
    this.reporter.unref();
    this.leases = setInterval(() => void this.tendLeases(), TAKEOVER_INTERVAL_MS);
    this.leases.unref();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([listens, new Promise<void>((resolve) => (timer = setTimeout(resolve, LISTEN_WAIT_MS)))]);
    clearTimeout(timer);
  }

  /**
   * What was announced while this worker did not listen (it was starting, or its connection was lost) waits
   * pending: taken up as soon as it listens (again), rather than by the reconciler half a minute or more later.
   * Read after LISTEN, so a submission committed meanwhile is either read here or announced to it.
   */
  private async takeUpPending(): Promise<void> {
    try {
      this.enqueue(await pendingSubmissionIds(this.deps.db.sql, this.deps.taskQueue, MAX_WAITING));
    } catch (e) {
      this.deps.log.warn("delivery queue: pending submissions not read; the delivery reconciler starts them", { error: e });
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.reporter);
    clearTimeout(this.retry);
    await this.listener?.close();
    await this.pumping;
  }

  async settled(): Promise<void> {
    // Bounded: every attempt ends within its budget (the drain cuts it sooner), a start within its deadline.
    while (this.ownClaims.size > 0) await Promise.all(this.ownClaims.values());
    clearInterval(this.leases);
  }

  private enqueue(ids: readonly string[]): void {
    for (const id of ids) {
      if (this.known.has(id) || this.waiting.length >= MAX_WAITING) continue;
      this.known.add(id);
      this.waiting.push(id);
    }
    this.pump();
  }

  private freeSlots(): number {
    const now = Date.now();
    for (const [id, expires] of this.inFlight) if (expires < now) this.inFlight.delete(id);
    return this.deps.capacity - this.inFlight.size;
  }

  private pump(): void {
    // Not while a claim runs, nor while a failed one waits to be tried again.
    if (this.pumping || this.retry || this.stopped || !this.starter) return;
    this.pumping = this.drain().finally(() => {
      this.pumping = undefined;
      // Slots freed or ids announced while the claim ran.
      if (this.waiting.length > 0 && this.freeSlots() > 0) this.pump();
    });
  }

  private async drain(): Promise<void> {
    while (!this.stopped && this.waiting.length > 0) {
      const room = Math.min(this.freeSlots(), CLAIM_BATCH);
      if (room <= 0) return;
      const ids = this.waiting.splice(0, room);
      let claimed: ClaimedSubmission[];
      try {
        claimed = await claimSubmissions(this.deps.db.sql, ids, CLAIM_LEASE_MS);
      } catch (e) {
        this.waiting.unshift(...ids);
        this.deps.log.warn("delivery queue: claim failed, trying again", { error: e });
        this.retry = setTimeout(() => {
          this.retry = undefined;
          this.pump();
        }, CLAIM_RETRY_MS);
        this.retry.unref();
        return;
      }
      for (const id of ids) this.known.delete(id);
      this.claimRate.add(claimed.length);
      const expires = Date.now() + IN_FLIGHT_TTL_MS;
      for (const c of claimed) {
        this.inFlight.set(c.submissionId, expires);
        const delivery = this.deps.workflows === "all" ? this.startWorkflow(c) : this.deliver(c);
        this.ownClaims.set(
          c.submissionId,
          delivery.finally(() => this.ownClaims.delete(c.submissionId)),
        );
      }
      if (claimed.length < ids.length) await this.startHolds(ids.filter((id) => !claimed.some((c) => c.submissionId === id)));
    }
  }

  /**
   * Held submissions are not claimed: their workflows start at once, take no slot (they wait for a person), and enter
   * the hold themselves; the queue never attempts them. Every worker may start one; a start finds a running
   * workflow and leaves it be.
   */
  private async startHolds(ids: readonly string[]): Promise<void> {
    try {
      const held = await heldAmong(this.deps.db.sql, ids);
      await Promise.all(held.map((h) => this.starter!.start(heldStart(h))));
    } catch (e) {
      this.deps.log.warn("held submissions' workflows not started; the hold reconciler will start them", { submissionIds: ids, error: e });
    }
  }

  /**
   * DELIVERY_WORKFLOWS=all: the claimed submission's workflow makes every attempt, the first one too (its first
   * attempt frees the slot: firstAttemptEnded); the lease ends once it has started.
   */
  private async startWorkflow(c: ClaimedSubmission): Promise<void> {
    try {
      await this.starter!.start({
        submissionId: c.submissionId,
        organizationId: c.organizationId,
        inboxId: c.inboxId,
        queued: { domains: c.domains, createdAtMs: c.createdAt.getTime(), ...this.deps.schedule },
      });
      await releaseClaims(this.deps.db.sql, [c.submissionId]);
    } catch (e) {
      this.inFlight.delete(c.submissionId);
      this.deps.log.warn("delivery workflow not started; it is taken over when its claim's lease runs out", { submissionId: c.submissionId, error: e });
    }
  }

  /** The first attempt to each domain, here; what they leave open goes to the submission's workflow. */
  private async deliver(c: ClaimedSubmission): Promise<void> {
    const attempted: Record<string, number> = {};
    const open: string[] = [];
    await Promise.all(
      c.domains.map(async (domain) => {
        try {
          const { remaining } = await this.deps.deliverer.firstAttempt(c, domain);
          attempted[domain] = 1;
          if (remaining > 0) open.push(domain);
        } catch (e) {
          // Not recorded (the database was unreachable): the workflow makes this domain's first attempt again.
          this.deps.log.warn("delivery: first attempt failed; the workflow makes it again", { submissionId: c.submissionId, domain, error: e });
          open.push(domain);
        }
      }),
    );
    this.firstAttemptEnded(c.submissionId);
    // Every recipient final: the recording ended the lease.
    if (open.length === 0) return;
    try {
      await this.starter!.start({
        submissionId: c.submissionId,
        organizationId: c.organizationId,
        inboxId: c.inboxId,
        queued: { domains: open.sort(), createdAtMs: c.createdAt.getTime(), ...this.deps.schedule },
        attempted: Object.fromEntries(open.filter((d) => attempted[d]).map((d) => [d, attempted[d]!])),
      });
      await releaseClaims(this.deps.db.sql, [c.submissionId]);
    } catch (e) {
      // The lease runs out and a worker of the queue (this one too) takes it over.
      this.deps.log.warn("delivery workflow not started; it is taken over when its claim's lease runs out", { submissionId: c.submissionId, error: e });
    }
  }

  /** Renews the leases this worker holds, then takes over those of the queue that ran out. */
  private async tendLeases(): Promise<void> {
    if (this.tending) return;
    this.tending = true;
    try {
      await renewClaims(this.deps.db.sql, [...this.ownClaims.keys()], CLAIM_LEASE_MS);
      if (!this.stopped && this.starter) await this.takeOver(this.starter);
    } catch (e) {
      this.deps.log.warn("delivery queue: leases not tended, trying again", { error: e });
    } finally {
      this.tending = false;
    }
  }

  private async takeOver(starter: DeliveryStarter): Promise<void> {
    const expired = (await takeOverExpiredClaims(this.deps.db.sql, this.deps.taskQueue, CLAIM_LEASE_MS, TAKEOVER_BATCH)).filter(
      (c) => !this.ownClaims.has(c.submissionId),
    );
    if (expired.length === 0) return;
    this.deps.log.info("delivery queue: taking over claims whose lease ran out", { count: expired.length });
    const started: string[] = [];
    await Promise.all(
      expired.map((c) =>
        starter.start(c).then(
          () => void started.push(c.submissionId),
          (e: unknown) => this.deps.log.warn("delivery workflow not started; tried again when the lease runs out", { submissionId: c.submissionId, error: e }),
        ),
      ),
    );
    await releaseClaims(this.deps.db.sql, started);
  }

  /** Reports the waiting submissions that are still pending, the oldest one's wait, and the claim rate. */
  private async report(): Promise<void> {
    let pending = 0;
    let oldestMs = 0;
    if (this.waiting.length > 0) {
      const [row] = await this.deps.db.sql.query<{ n: number; ms: number | null }>(
        `select count(*)::int as n, (extract(epoch from now() - min(created_at)) * 1000)::float8 as ms
           from submissions where id = any($1::uuid[]) and status = 'pending'`,
        [this.waiting.slice(0, REPORT_LOOKUP)],
      );
      pending = (row?.n ?? 0) + Math.max(0, this.waiting.length - REPORT_LOOKUP);
      oldestMs = Math.max(0, Math.round(Number(row?.ms ?? 0)));
    }
    // Reported while there is a backlog, and once more when it is gone.
    if (pending === 0 && !this.reportedBacklog) return;
    this.reportedBacklog = pending > 0;
    const report = [this.deps.taskQueue, this.workerId, pending, oldestMs, this.claimRate.perSecond()].join("\t");
    await this.deps.db.sql.query("select pg_notify($1, $2)", [DELIVERY_BACKLOG_REPORTED, report]);
  }
}
