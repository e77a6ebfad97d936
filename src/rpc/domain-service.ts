import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  CreateDomainResponseSchema,
  GetDomainResponseSchema,
  GetDomainTrafficResponseSchema,
  ListDomainsResponseSchema,
  type DomainService,
} from "../../gen/mailbox/v1/domain_service_pb.js";
import type { Config } from "../config.js";
import type { Domains } from "../domains/domains.js";
import { callerOf } from "./call-context.js";
import { toDomain, toDomainTraffic, toVerifyDomainResponse } from "./mappers.js";

export function createDomainService(deps: { config: Config; domains: Domains }): ServiceImpl<typeof DomainService> {
  const { domains } = deps;
  const records = deps.config.customerDomains;
  return {
    async createDomain(req, ctx) {
      const { store, principal } = callerOf(ctx);
      return create(CreateDomainResponseSchema, { domain: toDomain(await domains.create(store, principal, req.domain), records) });
    },
    async listDomains(req, ctx) {
      const { store } = callerOf(ctx);
      const page = await domains.list(store, req);
      return create(ListDomainsResponseSchema, { domains: page.items.map((d) => toDomain(d, records)), nextCursor: page.nextCursor });
    },
    async getDomain(req, ctx) {
      const { store } = callerOf(ctx);
      return create(GetDomainResponseSchema, { domain: toDomain(await domains.find(store, req.domainId), records) });
    },
    async verifyDomain(req, ctx) {
      const { store, principal } = callerOf(ctx);
      return toVerifyDomainResponse(await domains.verify(store, principal, req.domainId));
    },
    async getDomainTraffic(req, ctx) {
      const { store } = callerOf(ctx);
      return create(GetDomainTrafficResponseSchema, { traffic: toDomainTraffic(await domains.traffic(store, req.domainId)) });
    },
  };
}
