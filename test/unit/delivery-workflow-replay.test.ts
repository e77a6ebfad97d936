// Deliveries that were running when the first attempt became a local activity must go on with today's code: their
// recorded histories replay through the path they began on (patched "delivery-local-first-attempt"). The fixture
// is the history of a run of the earlier workflow (queue, an attempt that deferred, the wait, an attempt that
// delivered), encoded as a temporal.api.history.v1.History message. (Binary, not the CLI's JSON: the SDK's JSON
// reader fails with the two protobufjs copies this install has.)
import { readFile } from "node:fs/promises";
import proto from "@temporalio/proto";
import { Worker } from "@temporalio/worker";
import { expect, inject, test } from "vitest";

test("a delivery begun with every attempt an activity replays with today's workflow code", async () => {
  const bytes = await readFile(new URL("../fixtures/delivery-history-activities.bin", import.meta.url));
  const history = proto.temporal.api.history.v1.History.decode(bytes);
  expect(history.events.length).toBeGreaterThan(20);
  await expect(
    Worker.runReplayHistory({ workflowBundle: { code: inject("workflowBundleCode") } }, history, "deliver/00000000-0000-4000-8000-000000000001"),
  ).resolves.toBeUndefined();
});
