import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  CreateInboxResponseSchema,
  DeleteInboxResponseSchema,
  GetInboxResponseSchema,
  ListInboxesResponseSchema,
  type InboxService,
} from "../../gen/mailbox/v1/inbox_service_pb.js";
import type { Inboxes } from "../inboxes/inboxes.js";
import { callerOf } from "./call-context.js";
import { toInbox } from "./mappers.js";

export function createInboxService(deps: { inboxes: Inboxes }): Partial<ServiceImpl<typeof InboxService>> {
  const { inboxes } = deps;
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
    async deleteInbox(req, ctx) {
      const { principal, store } = callerOf(ctx);
      await inboxes.delete(store, principal, req.inboxId);
      return create(DeleteInboxResponseSchema);
    },
  };
}
