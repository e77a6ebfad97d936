import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  GetThreadResponseSchema,
  ListThreadsResponseSchema,
  ReplyToThreadResponseSchema,
  type ThreadService,
} from "../../gen/mailbox/v1/thread_service_pb.js";
import type { Threads } from "../mailbox/threads.js";
import { reply, type OutboundDeps } from "../outbound/outbound.js";
import { callerOf } from "./call-context.js";
import { fromOutgoingAttachments, threadSummaryFields, toMessage, toSendResult, toThreadSummary } from "./mappers.js";

export function createThreadService(deps: { threads: Threads; outbound: OutboundDeps }): Partial<ServiceImpl<typeof ThreadService>> {
  const { threads, outbound } = deps;
  return {
    async replyToThread(req, ctx) {
      const { principal, store } = callerOf(ctx);
      const result = await reply(outbound, store, principal, { ...req, attachments: fromOutgoingAttachments(req.attachments) });
      return create(ReplyToThreadResponseSchema, toSendResult(result));
    },
    async listThreads(req, ctx) {
      const { principal, store } = callerOf(ctx);
      const page = await threads.list(store, principal, req.inboxId, req);
      return create(ListThreadsResponseSchema, { threads: page.items.map(toThreadSummary), nextCursor: page.nextCursor });
    },
    async getThread(req, ctx) {
      const { principal, store } = callerOf(ctx);
      const { thread, messages } = await threads.get(store, principal, req.threadId, req);
      return create(GetThreadResponseSchema, {
        ...threadSummaryFields(thread),
        messages: messages.items.map(toMessage),
        nextCursor: messages.nextCursor,
      });
    },
  };
}
