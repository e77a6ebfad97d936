// The one mapping of unique violations to conflicts, for errors from MikroORM and from plain statements alike.
import { Code } from "@connectrpc/connect";
import { UniqueConstraintViolationException } from "@mikro-orm/core";
import pg from "pg";
import { describe, expect, test } from "vitest";
import { uniqueConflictOf } from "../../src/db/unique-conflicts.js";

function pgError(code: string, constraint: string | undefined): pg.DatabaseError {
  const e = new pg.DatabaseError("duplicate key value violates unique constraint", 0, "error");
  e.code = code;
  e.constraint = constraint;
  return e;
}

describe("uniqueConflictOf", () => {
  const orm = (constraint: string) => new UniqueConstraintViolationException(pgError("23505", constraint));
  test.each([
    ["a plain statement's violation of the inbox address", pgError("23505", "inboxes_address_unique"), "inbox_address_unavailable"],
    ["the ORM's violation of a domain name", orm("customer_domains_organization_id_domain_unique"), "domain_exists"],
    ["the ORM's violation of the live url index", orm("webhook_endpoints_live_url_unique"), "webhook_endpoint_exists"],
  ])("maps %s to 409 %s", (_what, error, code) => {
    expect(uniqueConflictOf(error)).toMatchObject({ errorCode: code, code: Code.AlreadyExists });
  });

  test.each([
    ["a violation of a constraint no conflict is declared for", pgError("23505", "messages_raw_id_inbox_id_unique")],
    ["a violation without a constraint name", pgError("23505", undefined)],
    ["another SQLSTATE on a mapped constraint (a foreign key)", pgError("23503", "inboxes_address_unique")],
    ["a name inherited from Object.prototype", pgError("23505", "constructor")],
    ["an error that is not the database's", Object.assign(new Error("no"), { code: "23505", constraint: "inboxes_address_unique" })],
  ])("leaves %s unmapped (an internal error)", (_what, error) => {
    expect(uniqueConflictOf(error)).toBeUndefined();
  });
});
