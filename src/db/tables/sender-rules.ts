// The `sender_rules` table: its columns and the statements that read and write it, for the API (setting and reading
// an inbox's or the organization's rules, src/senders/sender-rules.ts) and for inbound storing, which reads the rules
// that apply to the inboxes of a batch in its own transaction. A row with no inbox is the organization's default.
import type { SqlTx } from "../database.js";

/** Rules as stored: entries lower-cased, each once. */
export interface SenderRuleLists {
  readonly allow: readonly string[];
  readonly block: readonly string[];
  readonly requireAuthenticated: boolean;
}

export interface StoredSenderRules extends SenderRuleLists {
  /** The inbox they are of; null for the organization's default. */
  readonly inboxId: string | null;
  readonly updatedAt: Date;
}

interface Row {
  readonly inbox_id: string | null;
  readonly allow: string[];
  readonly block: string[];
  readonly require_authenticated: boolean;
  readonly updated_at: Date;
}

type Statement = { readonly text: string; readonly values: readonly unknown[] };

const SELECTED = `inbox_id, allow, block, require_authenticated, updated_at`;

function rulesOf(row: Row): StoredSenderRules {
  return { inboxId: row.inbox_id, allow: row.allow, block: row.block, requireAuthenticated: row.require_authenticated, updatedAt: row.updated_at };
}

/** The statement that reads an inbox's own rules and the organization's default (either may be missing). */
export function inboxAndDefaultRulesStatement(organizationId: string, inboxId: string | null): Statement {
  return {
    text: `select ${SELECTED} from sender_rules where organization_id = $1 and (inbox_id = $2 or inbox_id is null)`,
    values: [organizationId, inboxId],
  };
}

/** Rows of inboxAndDefaultRulesStatement (or of any statement selecting the same columns) as rules. */
export function storedRules(rows: readonly unknown[]): StoredSenderRules[] {
  return (rows as Row[]).map(rulesOf);
}

/** Sets the rules of an inbox (or the organization's default, inboxId null), replacing any; answers them as stored. */
export async function putSenderRules(tx: SqlTx, organizationId: string, inboxId: string | null, rules: SenderRuleLists, now: Date): Promise<StoredSenderRules> {
  const [row] = await tx.query<Row>(
    `insert into sender_rules (id, organization_id, inbox_id, allow, block, require_authenticated, updated_at)
     values (gen_random_uuid(), $1, $2, $3, $4, $5, $6)
     on conflict (organization_id, inbox_id) do update
        set allow = excluded.allow, block = excluded.block, require_authenticated = excluded.require_authenticated,
            updated_at = excluded.updated_at
     returning ${SELECTED}`,
    [organizationId, inboxId, [...rules.allow], [...rules.block], rules.requireAuthenticated, now],
  );
  return rulesOf(row!);
}

/** Removes an inbox's own rules; answers whether it had any. */
export async function deleteInboxSenderRules(tx: SqlTx, organizationId: string, inboxId: string): Promise<boolean> {
  const gone = await tx.query(`delete from sender_rules where organization_id = $1 and inbox_id = $2 returning 1`, [organizationId, inboxId]);
  return gone.length > 0;
}

/** A row of sender rules with its organization, as inboxRulesSelect reads it. */
export type InboxRulesRow = Row & { readonly organization_id: string };

/**
 * The SELECT of the rules of the inboxes a query named `inboxes` (id, organization_id) yields, each inbox's own and
 * their organizations' defaults, with its columns each under its name and type: inboxRules makes them the rules that
 * apply. For inbound storing, which reads them in the statement that locks its inboxes.
 */
export function inboxRulesSelect(inboxes: string): { readonly columns: readonly (readonly [name: string, type: string])[]; readonly select: string } {
  return {
    columns: [
      ["organization_id", "uuid"],
      ["inbox_id", "text"],
      ["allow", "text[]"],
      ["block", "text[]"],
      ["require_authenticated", "boolean"],
      ["updated_at", "timestamptz"],
    ],
    select: `select organization_id, ${SELECTED} from sender_rules
              where organization_id in (select organization_id from ${inboxes})
                and (inbox_id in (select id from ${inboxes}) or inbox_id is null)`,
  };
}

/** The rules that apply to each of these inboxes: the inbox's own, else its organization's default; an inbox under neither is absent. */
export function inboxRules(inboxes: readonly { readonly id: string; readonly organization_id: string }[], rows: readonly InboxRulesRow[]): Map<string, StoredSenderRules> {
  const own = new Map(rows.filter((r) => r.inbox_id !== null).map((r) => [r.inbox_id!, rulesOf(r)]));
  const defaults = new Map(rows.filter((r) => r.inbox_id === null).map((r) => [r.organization_id, rulesOf(r)]));
  const applying = new Map<string, StoredSenderRules>();
  for (const inbox of inboxes) {
    const rules = own.get(inbox.id) ?? defaults.get(inbox.organization_id);
    if (rules) applying.set(inbox.id, rules);
  }
  return applying;
}
