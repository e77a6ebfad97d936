import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization } from "./organization.js";

/**
 * An address one of the organization's own addresses (an inbox's, or a /v1/send sender's) exchanged mail with: the
 * sender of mail an inbox received, a recipient of mail sent from it (once the send was not, or no longer, held).
 * The holdFor policies ask it: first_contact (a recipient not here), new_domain (a recipient domain with no address
 * here). An inbox's rows go with its purge.
 */
export const Contact = defineEntity({
  name: "Contact",
  tableName: "contacts",
  properties: {
    organization: () => p.manyToOne(Organization).deleteRule("cascade").primary(),
    /** Our side: the inbox's address or the /v1/send sender, lower-cased. */
    ownAddress: p.string().length(320).primary(),
    /** Their side, normalised as outbound addresses are (lower-cased, IDN domain as A-labels). */
    address: p.string().length(320).primary(),
    /** The domain of `address`, for new_domain. */
    domain: p.string().length(253),
    /** When mail was first exchanged. */
    createdAt: p.datetime(3),
  },
  indexes: [{ properties: ["organization", "ownAddress", "domain"] }],
});

export type ContactRow = InferEntity<typeof Contact>;
