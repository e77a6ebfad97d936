import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization } from "./organization.js";

/** A conversation in one inbox. Its summary fields are kept current as messages join or leave it. */
export const Thread = defineEntity({
  name: "Thread",
  tableName: "threads",
  properties: {
    id: p.string().length(28).primary(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    inboxId: p.string().length(28),
    subject: p.text(),
    /** Every address that took part, lower-cased, in order of first appearance. */
    participants: p.array().$type<string[]>(),
    messageCount: p.integer().default(0),
    lastMessageAt: p.datetime(3),
    /**
     * A thread of mail that sender rules refused (src/senders): blocked mail never joins another thread, nor other
     * mail a blocked thread (but for replies to it), so lists leave it out whole unless asked.
     */
    blocked: p.boolean().default(false),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
  },
  indexes: [{ properties: ["inboxId", "lastMessageAt", "id"] }],
});

export type ThreadRow = InferEntity<typeof Thread>;
