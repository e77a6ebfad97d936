import { defineEntity, p } from "@mikro-orm/core";

/**
 * Messages and recipients an organization sent per window (minute or day), shared by every server process, in
 * shards: a send counts on the shard of its database connection (src/outbound/send-limits.ts), so concurrent sends
 * of one organization do not queue on one row lock. A window's count is the sum of its shards.
 */
export const SendWindow = defineEntity({
  name: "SendWindow",
  tableName: "send_windows",
  properties: {
    organizationId: p.uuid().primary(),
    /** minute or day. */
    kind: p.string().length(10).primary(),
    windowStart: p.datetime(0).primary(),
    /** 0 .. SEND_WINDOW_SHARDS - 1. */
    shard: p.smallint().primary().default(0),
    messages: p.integer(),
    recipients: p.integer(),
  },
});
