// A table's columns as one list of [column, value of a row], from which its multi-row INSERT is made: the column
// names are written once, next to what goes into them, so the list and the values cannot drift apart.
import type { SqlTx } from "../database.js";
import { insertRows, type Bind } from "../values.js";

export type Columns<T> = readonly (readonly [column: string, value: (row: T) => unknown])[];

/** An INSERT rendered with the caller's parameters, to run alone or with others in one statement (insertTogether). */
export type InsertPart = (bind: Bind) => string;

/** JSON columns: node-postgres would send a JavaScript array as a PostgreSQL array, so JSON goes as text. */
export function json(value: unknown): string | null {
  return value === null ? null : JSON.stringify(value);
}

function head<T>(table: string, columns: Columns<T>): string {
  return `insert into ${table} (${columns.map(([c]) => `"${c}"`).join(", ")}) values`;
}

function valuesOf<T>(columns: Columns<T>, row: T, bind: Bind): string {
  return `(${columns.map(([, value]) => bind(value(row))).join(", ")})`;
}

/** One INSERT of every row (split only past the wire protocol's parameter limit), every value bound. */
export function insertAll<T>(tx: SqlTx, table: string, columns: Columns<T>, rows: readonly T[]): Promise<void> {
  return insertRows(tx, head(table, columns), rows, (row, bind) => valuesOf(columns, row, bind));
}

/** The INSERT of these rows as a part of a statement; no part for no rows. */
export function insertPart<T>(table: string, columns: Columns<T>, rows: readonly T[]): InsertPart[] {
  if (rows.length === 0) return [];
  return [(bind) => `${head(table, columns)} ${rows.map((row) => valuesOf(columns, row, bind)).join(", ")}`];
}

/**
 * Runs several INSERTs as one statement (data-modifying WITH clauses): one round trip and one parse for a send's
 * rows. For rows counted in dozens; a batch of thousands goes through insertAll.
 */
export async function insertTogether(tx: SqlTx, parts: readonly InsertPart[]): Promise<void> {
  if (parts.length === 0) return;
  const params: unknown[] = [];
  const bind: Bind = (value) => `$${params.push(value)}`;
  const sql = parts.map((part) => part(bind));
  const last = sql.pop()!;
  await tx.query(sql.length === 0 ? last : `with ${sql.map((s, i) => `i${i} as (${s})`).join(", ")} ${last}`, params);
}
