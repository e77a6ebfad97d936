import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  DeleteInboxSenderRulesResponseSchema,
  GetInboxSenderRulesResponseSchema,
  GetOrganizationSenderRulesResponseSchema,
  UpdateInboxSenderRulesResponseSchema,
  UpdateOrganizationSenderRulesResponseSchema,
  type SenderRuleService,
  type SenderRuleSettings,
} from "../../gen/mailbox/v1/sender_rule_service_pb.js";
import type { SenderRules } from "../senders/sender-rules.js";
import { callerOf } from "./call-context.js";
import { toSenderRules } from "./mappers.js";

/** The request's rules; the contract requires them, so an absent message only reaches here as no entries. */
function settingsOf(rules: SenderRuleSettings | undefined) {
  return { allow: rules?.allow ?? [], block: rules?.block ?? [], requireAuthenticated: rules?.requireAuthenticated ?? false };
}

export function createSenderRuleService(deps: { senderRules: SenderRules }): Partial<ServiceImpl<typeof SenderRuleService>> {
  const { senderRules } = deps;
  return {
    async getInboxSenderRules(req, ctx) {
      const { principal, store } = callerOf(ctx);
      return create(GetInboxSenderRulesResponseSchema, { rules: toSenderRules(await senderRules.forInbox(store, principal, req.inboxId)) });
    },
    async updateInboxSenderRules(req, ctx) {
      const { principal, store } = callerOf(ctx);
      const rules = await senderRules.setForInbox(store, principal, req.inboxId, settingsOf(req.rules));
      return create(UpdateInboxSenderRulesResponseSchema, { rules: toSenderRules(rules) });
    },
    async deleteInboxSenderRules(req, ctx) {
      const { principal, store } = callerOf(ctx);
      await senderRules.removeForInbox(store, principal, req.inboxId);
      return create(DeleteInboxSenderRulesResponseSchema);
    },
    async getOrganizationSenderRules(_req, ctx) {
      const { principal, store } = callerOf(ctx);
      return create(GetOrganizationSenderRulesResponseSchema, { rules: toSenderRules(await senderRules.forOrganization(store, principal)) });
    },
    async updateOrganizationSenderRules(req, ctx) {
      const { principal, store } = callerOf(ctx);
      const rules = await senderRules.setForOrganization(store, principal, settingsOf(req.rules));
      return create(UpdateOrganizationSenderRulesResponseSchema, { rules: toSenderRules(rules) });
    },
  };
}
