import { defineEntity, p } from "@mikro-orm/core";

/**
 * Messages and recipients an organization sent per window (minute or day), shared by every server process; the
 * atomic upsert is the limiter of the organization's send limits.
 */
export const SendWindow = defineEntity({
  name: "SendWindow",
  tableName: "send_windows",
  properties: {
    organizationId: p.uuid().primary(),
    /** minute or day. */
    kind: p.string().length(10).primary(),
    windowStart: p.datetime(0).primary(),
    messages: p.integer(),
    recipients: p.integer(),
  },
});
