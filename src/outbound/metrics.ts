// Delivery metrics of an organization over a window of hours ending now. The population is the recipients of the
// submissions created in the window, counted by their state now; complaints are those received in the window.
// Latency is the time from a submission's acceptance to a recipient server's acceptance, over the delivered
// recipients, as PostgreSQL's interpolated percentile_cont. Rates are 0 when their denominator is 0. One query,
// on the (organization, createdAt) index of submissions and the (submissionId, position) index of recipients.
import type { TenantStore } from "../db/tenant-store.js";

export interface DeliveryMetrics {
  readonly hours: number;
  readonly since: Date;
  readonly counts: {
    readonly submitted: number;
    readonly delivered: number;
    readonly deferred: number;
    readonly bounced: number;
    readonly failed: number;
    readonly complaints: number;
  };
  readonly bounceRate: number;
  readonly deferralRate: number;
  readonly complaintRate: number;
  /** Whole milliseconds; null without deliveries. */
  readonly latency: { readonly p50Ms: number | null; readonly p90Ms: number | null; readonly p99Ms: number | null };
}

/** The window when the caller gives none (spec Limits: delivery metrics hours 1..720, default 24). */
export const DEFAULT_METRICS_HOURS = 24;

interface MetricsRow {
  submitted: number;
  delivered: number;
  deferred: number;
  bounced: number;
  failed: number;
  complaints: number;
  latency: (number | string)[] | null;
}

export type DeliveryMetricsReader = ReturnType<typeof createDeliveryMetrics>;

export function createDeliveryMetrics(deps: { readonly now?: () => Date } = {}) {
  const now = deps.now ?? (() => new Date());
  return {
    async read(store: TenantStore, hours = DEFAULT_METRICS_HOURS): Promise<DeliveryMetrics> {
      const since = new Date(now().getTime() - hours * 3_600_000);
      const [row] = await store.sqlRead<MetricsRow>((organizationId) => ({
        text: `select count(r.id)::int as submitted,
                count(r.id) filter (where r.status = 'delivered')::int as delivered,
                count(r.id) filter (where r.status = 'deferred')::int as deferred,
                count(r.id) filter (where r.status = 'bounced')::int as bounced,
                count(r.id) filter (where r.status = 'failed')::int as failed,
                (select count(*)::int from complaints c where c.organization_id = $1 and c.created_at >= $2) as complaints,
                percentile_cont(array[0.5, 0.9, 0.99]) within group (
                  order by greatest(0, extract(epoch from (r.delivered_at - s.created_at)) * 1000)
                ) filter (where r.status = 'delivered' and r.delivered_at is not null) as latency
           from submissions s
           join submission_recipients r on r.submission_id = s.id and r.organization_id = s.organization_id
          where s.organization_id = $1 and s.created_at >= $2`,
        values: [organizationId, since],
      }));
      const counts = {
        submitted: row?.submitted ?? 0,
        delivered: row?.delivered ?? 0,
        deferred: row?.deferred ?? 0,
        bounced: row?.bounced ?? 0,
        failed: row?.failed ?? 0,
        complaints: row?.complaints ?? 0,
      };
      const [p50Ms = null, p90Ms = null, p99Ms = null] = (row?.latency ?? []).map((v) => Math.round(Number(v)));
      return {
        hours,
        since,
        counts,
        bounceRate: rate(counts.bounced, counts.submitted),
        deferralRate: rate(counts.deferred, counts.submitted),
        complaintRate: rate(counts.complaints, counts.delivered),
        latency: { p50Ms, p90Ms, p99Ms },
      };
    },
  };
}

function rate(part: number, whole: number): number {
  return whole === 0 ? 0 : part / whole;
}
