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

/**
 * The rules that apply to each of these inboxes, read in the caller's transaction (inbound storing): the inbox's own,
 * else its organization's default; an inbox under neither is absent from the map.
 */
export async function rulesForInboxes(tx: SqlTx, inboxes: readonly { readonly id: string; readonly organization_id: string }[]): Promise<Map<string, StoredSenderRules>> {
  if (inboxes.length === 0) return new Map();
  const rows = await tx.query<Row & { organization_id: string }>(
    `select organization_id, ${SELECTED} from sender_rules
      where organization_id = any($2::uuid[]) and (inbox_id = any($1) or inbox_id is null)`,
    [inboxes.map((i) => i.id), [...new Set(inboxes.map((i) => i.organization_id))]],
  );
  const own = new Map(rows.filter((r) => r.inbox_id !== null).map((r) => [r.inbox_id!, rulesOf(r)]));
  const defaults = new Map(rows.filter((r) => r.inbox_id === null).map((r) => [r.organization_id, rulesOf(r)]));
  const applying = new Map<string, StoredSenderRules>();
  for (const inbox of inboxes) {
    const rules = own.get(inbox.id) ?? defaults.get(inbox.organization_id);
    if (rules) applying.set(inbox.id, rules);
  }
  return applying;
}
