import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  CreateInboxResponseSchema,
  DeleteInboxResponseSchema,
  ExportInboxResponseSchema,
  GetInboxResponseSchema,
  ListInboxesResponseSchema,
  WaitForMessageResponseSchema,
  type InboxService,
} from "../../gen/mailbox/v1/inbox_service_pb.js";
import type { Inboxes } from "../inboxes/inboxes.js";
import type { Messages } from "../mailbox/messages.js";
import type { MessageWaits } from "../mailbox/wait.js";
import { callerOf } from "./call-context.js";
import { toInbox, toMessage } from "./mappers.js";

/** The export format version written in every export page. */
const EXPORT_FORMAT_VERSION = 1;

export function createInboxService(deps: { inboxes: Inboxes; messages: Messages; waits: MessageWaits }): Partial<ServiceImpl<typeof InboxService>> {
  const { inboxes, messages, waits } = deps;
  return {
    async createInbox(req, ctx) {
      const { principal, store } = callerOf(ctx);
      const inbox = await inboxes.create(store, principal, req);
      return create(CreateInboxResponseSchema, { inbox: toInbox(inbox) });
    },
    async listInboxes(req, ctx) {
      const { principal, store } = callerOf(ctx);
      const page = await inboxes.list(store, principal, req);
      return create(ListInboxesResponseSchema, { inboxes: page.items.map(toInbox), nextCursor: page.nextCursor });
    },
    async getInbox(req, ctx) {
      const { principal, store } = callerOf(ctx);
      return create(GetInboxResponseSchema, { inbox: toInbox(await inboxes.findActive(store, principal, req.inboxId)) });
    },
    async exportInbox(req, ctx) {
      const { principal, store } = callerOf(ctx);
      const page = await messages.exportPage(store, principal, req.inboxId, req);
      return create(ExportInboxResponseSchema, {
        formatVersion: EXPORT_FORMAT_VERSION,
        inbox: toInbox(page.inbox),
        messages: page.messages.items.map(toMessage),
        nextCursor: page.messages.nextCursor,
      });
    },
    async waitForMessage(req, ctx) {
      const { principal, store } = callerOf(ctx);
      const found = await waits.wait(store, principal, req, ctx.signal);
      const message = found ? toMessage(found) : undefined;
      return create(WaitForMessageResponseSchema, { message, extracted: message?.extracted });
    },
    async deleteInbox(req, ctx) {
      const { principal, store } = callerOf(ctx);
      await inboxes.delete(store, principal, req.inboxId);
      return create(DeleteInboxResponseSchema);
    },
  };
}
