import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  ValidateEmailResponseSchema,
  ValidateEmailsResponseSchema,
  type ValidationService,
} from "../../gen/mailbox/v1/validation_service_pb.js";
import type { EmailValidator } from "../validation/validator.js";
import { callerOf } from "./call-context.js";
import { toEmailValidation } from "./mappers.js";

export function createValidationService(deps: { validator: EmailValidator }): ServiceImpl<typeof ValidationService> {
  const { validator } = deps;
  return {
    async validateEmail(req, ctx) {
      const { principal } = callerOf(ctx);
      const [result] = await validator.validate(principal.organizationId, [req.email]);
      return create(ValidateEmailResponseSchema, { result: toEmailValidation(result!) });
    },
    async validateEmails(req, ctx) {
      const { principal } = callerOf(ctx);
      const results = await validator.validate(principal.organizationId, req.emails);
      return create(ValidateEmailsResponseSchema, { results: results.map(toEmailValidation) });
    },
  };
}
