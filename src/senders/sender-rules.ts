// Sender rules: whose mail an inbox takes (issue 16 item 3). An inbox follows its own rules when set, else its
// organization's default. Inbound storing judges each message against them in its own transaction, with the rules
// committed then (src/inbound/store.ts); a refused message is stored all the same, marked blocked.
//
// What is matched: the From address as stored (the envelope sender for a message without From), its domain in
// A-labels; for an authenticated sender, the From domain DMARC proved. Without requireAuthenticated that address is
// whatever the sender wrote, so a block entry is bypassed by writing another From and an allow entry matched by
// forging the allowed one; requireAuthenticated first refuses every sender DMARC did not authenticate, after which
// the lists hold against forgery.
import { requireUnrestrictedInboxes, type Principal } from "../auth/principal.js";
import type { SenderRuleOutcome } from "../db/entities/message.js";
import {
  deleteInboxSenderRules,
  inboxAndDefaultRulesStatement,
  putSenderRules,
  storedRules,
  type SenderRuleLists,
  type StoredSenderRules,
} from "../db/tables/sender-rules.js";
import type { TenantStore } from "../db/tenant-store.js";
import { toAsciiDomain } from "../dns/names.js";
import type { Inboxes } from "../inboxes/inboxes.js";

export type { SenderRuleOutcome } from "../db/entities/message.js";

/** Who a message is from, as rules match it. */
export interface Sender {
  /** The From address, lower-cased, its domain in A-labels ("" for the null sender of a message without From). */
  readonly address: string;
  /** Its domain in lower-case A-labels; null when it has none that is a domain name. */
  readonly domain: string | null;
  /** DMARC passed: the domain is the sender's. */
  readonly authenticated: boolean;
}

/** The sender of a stored message: its From address, and the domain DMARC proved when it passed. */
export function senderOf(fromEmail: string, authentication: { readonly senderAuthenticated: boolean; readonly fromDomain: string | null } | null): Sender {
  const written = fromEmail.trim().toLowerCase();
  const at = written.lastIndexOf("@");
  const authenticated = authentication?.senderAuthenticated === true && authentication.fromDomain !== null;
  const ascii = at < 0 ? null : toAsciiDomain(written.slice(at + 1));
  const domain = authenticated ? authentication!.fromDomain : ascii?.ok ? ascii.domain : null;
  return { address: domain === null || at < 0 ? written : `${written.slice(0, at)}@${domain}`, domain, authenticated };
}

/**
 * What rules decide for a sender: a matching block entry refuses (it wins over any allow entry); requireAuthenticated
 * refuses an unauthenticated sender; an allow list with entries refuses a sender it does not name; a matching allow
 * entry allows; anything else is none. No rules: none.
 */
export function judgeSender(rules: SenderRuleLists | undefined, sender: Sender): SenderRuleOutcome {
  if (!rules) return "none";
  if (rules.block.some((entry) => matches(entry, sender))) return "blocked";
  if (rules.requireAuthenticated && !sender.authenticated) return "blocked";
  if (rules.allow.some((entry) => matches(entry, sender))) return "allowed";
  return rules.allow.length > 0 ? "blocked" : "none";
}

/** An address entry matches the address; a domain entry the domain and its subdomains. */
function matches(entry: string, sender: Sender): boolean {
  if (entry.includes("@")) return entry === sender.address;
  const { domain } = sender;
  return domain !== null && (domain === entry || domain.endsWith(`.${entry}`));
}

/** Entries as stored: trimmed, lower-cased, each once, in the order given. */
export function normalizedRules(rules: { readonly allow: readonly string[]; readonly block: readonly string[]; readonly requireAuthenticated: boolean }): SenderRuleLists {
  const normalized = (entries: readonly string[]) => [...new Set(entries.map((e) => e.trim().toLowerCase()))];
  return { allow: normalized(rules.allow), block: normalized(rules.block), requireAuthenticated: rules.requireAuthenticated };
}

/** Rules as the API shows them: where they come from, and none when nothing is set. */
export interface AppliedSenderRules extends SenderRuleLists {
  readonly source: "inbox" | "organization" | "none";
  readonly updatedAt: Date | null;
}

const NO_RULES: AppliedSenderRules = { allow: [], block: [], requireAuthenticated: false, source: "none", updatedAt: null };

function applied(rules: StoredSenderRules | undefined): AppliedSenderRules {
  if (!rules) return NO_RULES;
  const { allow, block, requireAuthenticated, updatedAt } = rules;
  return { allow, block, requireAuthenticated, updatedAt, source: rules.inboxId === null ? "organization" : "inbox" };
}

export type SenderRules = ReturnType<typeof createSenderRules>;

export function createSenderRules(deps: { readonly inboxes: Inboxes }) {
  const { inboxes } = deps;

  /** The inbox's own rules and the default: 404 for an inbox that is not an active one the key may read. */
  async function rulesAround(store: TenantStore, principal: Principal, inboxId: string | null): Promise<StoredSenderRules[]> {
    if (inboxId !== null) await inboxes.findActive(store, principal, inboxId);
    return storedRules(await store.sqlRead((organizationId) => inboxAndDefaultRulesStatement(organizationId, inboxId)));
  }

  return {
    /** The rules that apply to the inbox: its own, else the organization's default, else none. */
    async forInbox(store: TenantStore, principal: Principal, inboxId: string): Promise<AppliedSenderRules> {
      const rows = await rulesAround(store, principal, inboxId);
      return applied(rows.find((r) => r.inboxId === inboxId) ?? rows.find((r) => r.inboxId === null));
    },

    async setForInbox(store: TenantStore, principal: Principal, inboxId: string, rules: SenderRuleLists): Promise<AppliedSenderRules> {
      await inboxes.findActive(store, principal, inboxId);
      return applied(await store.sqlTransaction((tx) => putSenderRules(tx, tx.organizationId, inboxId, normalizedRules(rules), new Date())));
    },

    async removeForInbox(store: TenantStore, principal: Principal, inboxId: string): Promise<void> {
      await inboxes.findActive(store, principal, inboxId);
      await store.sqlTransaction((tx) => deleteInboxSenderRules(tx, tx.organizationId, inboxId));
    },

    async forOrganization(store: TenantStore, principal: Principal): Promise<AppliedSenderRules> {
      return applied((await rulesAround(store, principal, null)).find((r) => r.inboxId === null));
    },

    /** The default applies to every inbox without rules of its own: a key restricted to inboxes may not set it. */
    async setForOrganization(store: TenantStore, principal: Principal, rules: SenderRuleLists): Promise<AppliedSenderRules> {
      requireUnrestrictedInboxes(principal, "set the organization's sender rules");
      return applied(await store.sqlTransaction((tx) => putSenderRules(tx, tx.organizationId, null, normalizedRules(rules), new Date())));
    },
  };
}
