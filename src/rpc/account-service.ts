import type { ServiceImpl } from "@connectrpc/connect";
import type { AccountService } from "../../gen/mailbox/v1/account_service_pb.js";
import { readAccessProfile } from "../accounts/profile.js";
import type { Config } from "../config.js";
import { callerOf } from "./call-context.js";
import { toGetMeResponse } from "./mappers.js";

export function createAccountService(deps: { config: Config }): Partial<ServiceImpl<typeof AccountService>> {
  return {
    async getMe(_req, ctx) {
      const { principal, store } = callerOf(ctx);
      const platformLimits = { ...deps.config.platformLimits, uploadStorageBytes: BigInt(deps.config.uploads.storageBytes) };
      return toGetMeResponse(await readAccessProfile(store, principal), platformLimits);
    },
  };
}
