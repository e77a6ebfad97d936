import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { StreamEventsResponseSchema, type EventService } from "../../gen/mailbox/v1/event_service_pb.js";
import type { EventStreams } from "../events/stream.js";
import { callerOf, principalNow } from "./call-context.js";
import { toEvent } from "./mappers.js";

export function createEventService(deps: { streams: EventStreams }): Partial<ServiceImpl<typeof EventService>> {
  const { streams } = deps;
  return {
    async *streamEvents(req, ctx) {
      const { principal, store } = callerOf(ctx);
      for await (const event of streams.stream(store, principal, req, ctx.signal, principalNow(ctx))) {
        // A message without an event keeps the connection alive (and the first one says the stream is open).
        yield create(StreamEventsResponseSchema, { event: event === null ? undefined : toEvent(event.payload, event.sender_authenticated) });
      }
    },
  };
}
