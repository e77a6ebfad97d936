import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  DeleteWebhookResponseSchema,
  ListWebhooksResponseSchema,
  type WebhookService,
} from "../../gen/mailbox/v1/webhook_service_pb.js";
import type { WebhookEndpoints } from "../webhooks/endpoints.js";
import { callerOf } from "./call-context.js";
import { toCreateWebhookResponse, toWebhookEndpoint } from "./mappers.js";

export function createWebhookService(deps: { webhooks: WebhookEndpoints }): Partial<ServiceImpl<typeof WebhookService>> {
  const { webhooks } = deps;
  return {
    async createWebhook(req, ctx) {
      const { principal, store } = callerOf(ctx);
      const { endpoint, replayed } = await webhooks.create(store, principal, req);
      return toCreateWebhookResponse(endpoint, replayed);
    },
    async listWebhooks(req, ctx) {
      const { store } = callerOf(ctx);
      const page = await webhooks.list(store, req);
      return create(ListWebhooksResponseSchema, { endpoints: page.items.map(toWebhookEndpoint), nextCursor: page.nextCursor });
    },
    async deleteWebhook(req, ctx) {
      const { principal, store } = callerOf(ctx);
      await webhooks.delete(store, principal, req.webhookId);
      return create(DeleteWebhookResponseSchema);
    },
  };
}
