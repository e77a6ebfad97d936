// Readiness of the Temporal frontend, one of the checks of /readyz (src/metrics/status.ts).
import type { Client } from "@temporalio/client";
import { CHECK_TIMEOUT_MS, type ReadinessCheck } from "../metrics/status.js";

/** The Temporal frontend answers on the client's connection. */
export function temporalReadiness(temporal: Client): ReadinessCheck {
  return {
    name: "temporal",
    check: async () => {
      await temporal.connection.withDeadline(Date.now() + CHECK_TIMEOUT_MS, () => temporal.connection.workflowService.getSystemInfo({}));
    },
  };
}
