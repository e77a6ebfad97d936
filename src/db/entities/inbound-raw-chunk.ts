import { defineEntity, p } from "@mikro-orm/core";
import { InboundRawMessage } from "./inbound-raw-message.js";

/**
 * A piece of a large raw message, committed in order with its row: a message spooled to disk while it arrived is
 * inserted a chunk per statement, so no process holds it whole (src/inbound/receive.ts). Its row's `raw` is empty.
 */
export const InboundRawChunk = defineEntity({
  name: "InboundRawChunk",
  tableName: "inbound_raw_chunks",
  properties: {
    rawMessage: () => p.manyToOne(InboundRawMessage).primary().deleteRule("cascade"),
    seq: p.integer().primary(),
    data: p.blob(),
  },
});
