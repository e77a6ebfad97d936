// Custom search attributes: every workflow of this service carries the organization and inbox it works for.
import type { ConnectionLike } from "@temporalio/client";

/** Search attributes every workflow of this service carries, so operators find them in the Temporal UI. */
export const SEARCH_ATTRIBUTE = {
  organizationId: "MailboxOrganizationId",
  inboxId: "MailboxInboxId",
} as const;

export type SearchAttributeType = "Keyword" | "Text" | "Int" | "Double" | "Bool" | "Datetime" | "KeywordList";

export const MAILBOX_SEARCH_ATTRIBUTES: Readonly<Record<string, SearchAttributeType>> = {
  [SEARCH_ATTRIBUTE.organizationId]: "Keyword",
  [SEARCH_ATTRIBUTE.inboxId]: "Keyword",
};

// Wire values of temporal.api.enums.v1.IndexedValueType (@temporalio/proto is not a direct dependency).
const INDEXED_VALUE_TYPE: Readonly<Record<SearchAttributeType, number>> = {
  Text: 1,
  Keyword: 2,
  Int: 3,
  Double: 4,
  Bool: 5,
  Datetime: 6,
  KeywordList: 7,
};

/**
 * Adds the attributes a namespace lacks. The dev server's --search-attribute only applies when it creates the
 * namespace, and the server silently keeps an existing attribute of another type, so that is checked here.
 */
export async function registerSearchAttributes(
  connection: ConnectionLike,
  namespace: string,
  attributes: Readonly<Record<string, SearchAttributeType>>,
): Promise<void> {
  const wanted = Object.entries(attributes);
  if (wanted.length === 0) return;
  const names = wanted.map(([name, type]) => `${name} (${type})`).join(", ");
  // Temporal Cloud's API keys (and locked-down clusters) may not list or add attributes: say which ones it takes.
  const cannot = (what: string, e: unknown) =>
    new Error(
      `cannot ${what} the search attributes of namespace "${namespace}" (${(e as Error).message}); ` +
        `this service needs ${names}: add them (temporal operator search-attribute create, or tcld / the Cloud UI) and restart`,
    );
  let existing: Record<string, number>;
  try {
    existing = (await connection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};
  } catch (e) {
    throw cannot("list", e);
  }
  for (const [name, type] of wanted) {
    const current = existing[name];
    if (current !== undefined && current !== INDEXED_VALUE_TYPE[type]) {
      const currentType = Object.entries(INDEXED_VALUE_TYPE).find(([, value]) => value === current)?.[0] ?? current;
      throw new Error(`search attribute ${name} already has type ${currentType} in namespace "${namespace}", not ${type}`);
    }
  }
  const missing = wanted.filter(([name]) => existing[name] === undefined);
  if (missing.length === 0) return;
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map(([name, type]) => [name, INDEXED_VALUE_TYPE[type]])),
    });
  } catch (e) {
    throw new Error(
      `search attributes ${missing.map(([name, type]) => `${name} (${type})`).join(", ")} are missing in namespace "${namespace}" ` +
        `and could not be added (${(e as Error).message}): add them (temporal operator search-attribute create, or tcld / the Cloud UI) and restart`,
    );
  }
}
