import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  ApproveSubmissionResponseSchema,
  ComplaintSchema,
  DeleteSuppressionResponseSchema,
  GetDeliveryMetricsResponseSchema,
  GetSubmissionResponseSchema,
  SendEmailResponseSchema,
  ListComplaintsResponseSchema,
  ListSubmissionsResponseSchema,
  ListSuppressionsResponseSchema,
  RejectSubmissionResponseSchema,
  SuppressionSchema,
  type Complaint,
  type DeliveryService,
  type GetDeliveryMetricsResponse,
  type Suppression,
} from "../../gen/mailbox/v1/delivery_service_pb.js";
import type { ComplaintRow } from "../db/entities/complaint.js";
import type { SuppressionRow } from "../db/entities/suppression.js";
import type { Complaints } from "../outbound/complaints.js";
import type { DeliveryMetrics, DeliveryMetricsReader } from "../outbound/metrics.js";
import type { Suppressions } from "../outbound/suppressions.js";
import { decideSubmission, type HoldDecisionDeps } from "../outbound/holds.js";
import { sendEmail, type OutboundDeps } from "../outbound/outbound.js";
import { getSubmission, listSubmissions } from "../outbound/submissions.js";
import type { CursorCodec } from "../pagination/cursor.js";
import { callerOf } from "./call-context.js";
import { fromOutgoingAttachments, toSubmission } from "./mappers.js";

export interface DeliveryServiceDeps {
  readonly deliveryMetrics: DeliveryMetricsReader;
  readonly suppressions: Suppressions;
  readonly complaints: Complaints;
  readonly outbound: OutboundDeps;
  /** Decisions on held submissions: who is told, where failures are logged. */
  readonly holds: HoldDecisionDeps;
  readonly cursors: CursorCodec;
}

export function createDeliveryService(deps: DeliveryServiceDeps): Partial<ServiceImpl<typeof DeliveryService>> {
  const { deliveryMetrics, suppressions, complaints, outbound, holds } = deps;
  return {
    async sendEmail(req, ctx) {
      const { principal, store } = callerOf(ctx);
      const input = { ...req, from: req.from!, replyTo: req.replyTo, attachments: fromOutgoingAttachments(req.attachments) };
      const result = await sendEmail(outbound, store, principal, input);
      return create(SendEmailResponseSchema, { submission: toSubmission(result.submission), replayed: result.replayed });
    },
    async getSubmission(req, ctx) {
      const { principal, store } = callerOf(ctx);
      return create(GetSubmissionResponseSchema, { submission: toSubmission(await getSubmission(store, principal, req.submissionId)) });
    },
    async listSubmissions(req, ctx) {
      const { principal, store } = callerOf(ctx);
      const page = await listSubmissions(deps, store, principal, req);
      return create(ListSubmissionsResponseSchema, { submissions: page.items.map(toSubmission), nextCursor: page.nextCursor });
    },
    async approveSubmission(req, ctx) {
      const { principal, store } = callerOf(ctx);
      return create(ApproveSubmissionResponseSchema, { submission: toSubmission(await decideSubmission(holds, store, principal, req.submissionId, "approved")) });
    },
    async rejectSubmission(req, ctx) {
      const { principal, store } = callerOf(ctx);
      return create(RejectSubmissionResponseSchema, { submission: toSubmission(await decideSubmission(holds, store, principal, req.submissionId, "rejected")) });
    },
    async getDeliveryMetrics(req, ctx) {
      const { store } = callerOf(ctx);
      return toDeliveryMetrics(await deliveryMetrics.read(store, req.hours));
    },
    async listSuppressions(req, ctx) {
      const { store } = callerOf(ctx);
      const page = await suppressions.list(store, req);
      return create(ListSuppressionsResponseSchema, { suppressions: page.items.map(toSuppression), nextCursor: page.nextCursor });
    },
    async deleteSuppression(req, ctx) {
      const { principal, store } = callerOf(ctx);
      await suppressions.delete(store, principal, req.email);
      return create(DeleteSuppressionResponseSchema);
    },
    async listComplaints(req, ctx) {
      const { store } = callerOf(ctx);
      const page = await complaints.list(store, req);
      return create(ListComplaintsResponseSchema, { complaints: page.items.map(toComplaint), nextCursor: page.nextCursor });
    },
  };
}

// Mappers of this service's rows (kept here: they have no other user).
function toDeliveryMetrics(m: DeliveryMetrics): GetDeliveryMetricsResponse {
  return create(GetDeliveryMetricsResponseSchema, {
    hours: m.hours,
    since: timestampFromDate(m.since),
    counts: m.counts,
    bounceRate: m.bounceRate,
    deferralRate: m.deferralRate,
    complaintRate: m.complaintRate,
    latency: {
      p50Ms: m.latency.p50Ms ?? undefined,
      p90Ms: m.latency.p90Ms ?? undefined,
      p99Ms: m.latency.p99Ms ?? undefined,
    },
  });
}

function toSuppression(row: SuppressionRow): Suppression {
  return create(SuppressionSchema, {
    email: row.email,
    reason: row.reason,
    detail: row.detail ?? undefined,
    createdAt: timestampFromDate(row.createdAt),
  });
}

function toComplaint(row: ComplaintRow): Complaint {
  return create(ComplaintSchema, {
    id: row.id,
    email: row.email,
    feedbackType: row.feedbackType,
    submissionId: row.submissionId ?? undefined,
    userAgent: row.userAgent ?? undefined,
    createdAt: timestampFromDate(row.createdAt),
  });
}
