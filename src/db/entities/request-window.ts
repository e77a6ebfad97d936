import { defineEntity, p } from "@mikro-orm/core";

/**
 * Requests counted per API key and minute, shared by every server process. The table is UNLOGGED (see its
 * migration): counters are worth no WAL write per request, and losing them in a crash only resets a window.
 */
export const RequestWindow = defineEntity({
  name: "RequestWindow",
  tableName: "request_windows",
  properties: {
    keyId: p.uuid().primary(),
    windowStart: p.datetime(0).primary(),
    count: p.integer(),
  },
});
