import { PermissionDenied } from "../errors.js";

/**
 * Which sends wait for a person's decision before anything is sent: none; first_contact (a recipient the sending
 * address never exchanged mail with); new_domain (a recipient domain it never did); all.
 */
export const HOLD_POLICIES = ["none", "first_contact", "new_domain", "all"] as const;

export type HoldPolicy = (typeof HOLD_POLICIES)[number];

/** Who is calling: the key and its organization as read at authentication time. */
export interface Principal {
  readonly keyId: string;
  readonly organizationId: string;
  readonly kind: string;
  readonly scopes: readonly string[];
  readonly inboxIds: readonly string[] | null;
  readonly allowedIps: readonly string[] | null;
  readonly sendMode: string;
  readonly allowedRecipientDomains: readonly string[] | null;
  readonly expiresAt: Date | null;
  readonly requestsPerMinute: number;
  /** The key's own hold policy, or null when its organization's applies. */
  readonly keyHoldFor: HoldPolicy | null;
  /** The policy that holds this key's sends: its own when set, else its organization's. */
  readonly holdFor: HoldPolicy;
}

export function hasScope(principal: Principal, scope: string): boolean {
  return scope === "" || principal.scopes.includes("*") || principal.scopes.includes(scope);
}

/** Whether the key may touch the inbox at all; callers answer 404 so restricted keys learn nothing. */
export function canAccessInbox(principal: Principal, inboxId: string): boolean {
  return principal.inboxIds === null || principal.inboxIds.includes(inboxId);
}

export function requireUnrestrictedInboxes(principal: Principal, action: string): void {
  if (principal.inboxIds !== null) {
    throw new PermissionDenied(`this key is restricted to particular inboxes and cannot ${action}`, "inbox_restricted");
  }
}
