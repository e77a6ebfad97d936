import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization } from "./organization.js";

/** The last verification of one capability of a domain (inbound or outbound). */
export interface CapabilityRecord {
  /** unverified, verified, grace (temporary DNS failure inside the grace period) or failed. */
  state: string;
  lastCheckedAt: string | null;
  lastSuccessAt: string | null;
  graceUntil: string | null;
}

/**
 * A customer-owned domain. Inbound (ownership + MX) and outbound (ownership + DKIM) verify independently and are
 * re-checked after a refresh age. The DKIM private key is stored encrypted with a key from configuration.
 */
export const CustomerDomain = defineEntity({
  name: "CustomerDomain",
  tableName: "customer_domains",
  properties: {
    id: p.uuid().primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    /** The name in punycode, lower-cased. */
    domain: p.string().length(253),
    ownershipToken: p.string().length(64),
    dkimSelector: p.string().length(63),
    dkimPublicKey: p.text(),
    /** AES-256-GCM encrypted PKCS#8 PEM: iv.tag.ciphertext, base64url. */
    dkimPrivateKeyEncrypted: p.text().hidden(),
    inbound: p.json<CapabilityRecord>(),
    outbound: p.json<CapabilityRecord>(),
    /** The checks of the last verification, as returned by verify. */
    lastChecks: p.json<unknown[]>().nullable(),
    lastCheckedAt: p.datetime(3).nullable(),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
  },
  uniques: [{ properties: ["organization", "domain"] }],
  indexes: [{ properties: ["domain"] }, { properties: ["organization", "createdAt", "id"] }],
});

export type CustomerDomainRow = InferEntity<typeof CustomerDomain>;
