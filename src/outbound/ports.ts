// What outbound acceptance needs from Temporal, as an interface the composition root fills in.

/** Starts the delivery workflow of a committed submission (`deliver/<submissionId>`); idempotent. */
export interface DeliveryStarter {
  start(submission: { readonly submissionId: string; readonly organizationId: string; readonly inboxId: string | null }): Promise<void>;
}
