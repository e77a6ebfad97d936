import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  DeleteMessageResponseSchema,
  GetAttachmentResponseSchema,
  type MessageService,
} from "../../gen/mailbox/v1/message_service_pb.js";
import type { Messages } from "../mailbox/messages.js";
import { callerOf } from "./call-context.js";

export function createMessageService(deps: { messages: Messages }): Partial<ServiceImpl<typeof MessageService>> {
  const { messages } = deps;
  return {
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
