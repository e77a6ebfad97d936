// Plain JSON argument and result types of workflows: ids and primitives only, never entities or proto messages.

export interface InboxPurgeArgs {
  readonly inboxId: string;
  readonly organizationId: string;
  readonly batchSize: number;
}

export interface InboxPurgeResult {
  readonly deletedRows: number;
}

/** Search attributes every workflow of this service carries, so operators find them in the Temporal UI. */
export const SEARCH_ATTRIBUTE = {
  organizationId: "MailboxOrganizationId",
  inboxId: "MailboxInboxId",
} as const;
