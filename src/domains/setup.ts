// Building the customer-domain parts from configuration, for the roles that need them: the API (registration,
// verify, inbox creation), the worker (the re-check workflow), and inbound SMTP and outbound delivery
// (capability checks, DKIM keys).
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import type { DnsResolver } from "../dns/resolver.js";
import { createDomainCapabilities } from "./capabilities.js";
import { createDkimKeyVault } from "./dkim-keys.js";
import { createDkimSigningKeys } from "./signing-keys.js";
import { createDomainVerifier, type DomainVerifier } from "./verifier.js";

export function createConfiguredVerifier(config: Config, db: Database, resolver: DnsResolver): DomainVerifier {
  const { inboundMxHost, spfInclude, graceMs } = config.customerDomains;
  return createDomainVerifier({ db, resolver, settings: { inboundMxHost, spfInclude, graceMs } });
}

export function createConfiguredCapabilities(config: Config, db: Database, verifier: DomainVerifier) {
  return createDomainCapabilities({ db, verifier, refreshMs: config.customerDomains.refreshMs });
}

/** dkimKeySecret: config.customerDomains.dkimKeySecret, or the one generated under DATA_DIR. */
export function createConfiguredSigningKeys(db: Database, dkimKeySecret: string) {
  return createDkimSigningKeys({ db, vault: createDkimKeyVault(dkimKeySecret) });
}
