import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  DeleteMessageResponseSchema,
  ForwardMessageResponseSchema,
  GetAttachmentResponseSchema,
  SendMessageResponseSchema,
  type MessageService,
} from "../../gen/mailbox/v1/message_service_pb.js";
import type { Messages } from "../mailbox/messages.js";
import type { ForwardMode } from "../outbound/forward.js";
import { forward, sendMessage, type OutboundDeps } from "../outbound/outbound.js";
import { callerOf } from "./call-context.js";
import { fromOutgoingAttachments, toSendResult } from "./mappers.js";

export function createMessageService(deps: { messages: Messages; outbound: OutboundDeps }): Partial<ServiceImpl<typeof MessageService>> {
  const { messages, outbound } = deps;
  return {
    async sendMessage(req, ctx) {
      const { principal, store } = callerOf(ctx);
      const result = await sendMessage(outbound, store, principal, { ...req, attachments: fromOutgoingAttachments(req.attachments) });
      return create(SendMessageResponseSchema, toSendResult(result));
    },
    async forwardMessage(req, ctx) {
      const { principal, store } = callerOf(ctx);
      const result = await forward(outbound, store, principal, { ...req, mode: req.mode as ForwardMode | undefined });
      return create(ForwardMessageResponseSchema, toSendResult(result));
    },
    async deleteMessage(req, ctx) {
      const { principal, store } = callerOf(ctx);
      await messages.delete(store, principal, req.messageId);
      return create(DeleteMessageResponseSchema);
    },
    async getAttachment(req, ctx) {
      const { principal, store } = callerOf(ctx);
      const download = await messages.downloadAttachment(store, principal, req.messageId, req.attachmentId);
      return create(GetAttachmentResponseSchema, { content: download.content, filename: download.filename });
    },
  };
}
