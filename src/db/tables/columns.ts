// A table's columns as one list of [column, value of a row], from which its INSERTs are made: the column names are
// written once, next to what goes into them, so the list and the values cannot drift apart.
import type { SqlTx } from "../database.js";
import { insertRows, type Bind } from "../values.js";

export type Columns<T> = readonly (readonly [column: string, value: (row: T) => unknown])[];

/** Columns with their PostgreSQL types, for INSERTs that bind one array per column (unnestInsert). */
export type TypedColumns<T> = readonly (readonly [column: string, type: string, value: (row: T) => unknown])[];

/** An INSERT rendered with the caller's parameters, to run alone or with others in one statement (insertTogether). */
export type InsertPart = (bind: Bind) => string;

/** JSON columns: node-postgres would send a JavaScript array as a PostgreSQL array, so JSON goes as text. */
export function json(value: unknown): string | null {
  return value === null ? null : JSON.stringify(value);
}

function names(columns: readonly (readonly [string, ...unknown[]])[]): string {
  return columns.map(([c]) => `"${c}"`).join(", ");
}

function head<T>(table: string, columns: Columns<T>): string {
  return `insert into ${table} (${names(columns)}) values`;
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

/** The INSERT of one row, made only when `from` yields a row (`insert … select <values> from <from>`). */
export function insertFromPart<T>(table: string, columns: Columns<T>, row: T, from: string): InsertPart {
  return (bind) => `insert into ${table} (${names(columns)}) select ${columns.map(([, value]) => bind(value(row))).join(", ")} from ${from}`;
}

/**
 * The INSERT of these rows as one array per column, inserted in the order given: one statement and the same number
 * of parameters whatever the number of rows. Not for bytea columns (inside an array a Buffer travels as hex text)
 * nor array columns (unnest would flatten them). `after`: a relation of one row (a WITH query's name) joined to
 * the rows, so none is inserted before it was read whole.
 */
export function unnestInsert<T>(table: string, columns: TypedColumns<T>, rows: readonly T[], after?: string): InsertPart {
  return (bind) => {
    const arrays = columns.map(([, type, value]) => `${bind(rows.map(value))}::${type}[]`).join(", ");
    return `insert into ${table} (${names(columns)})
            select ${columns.map(([c]) => `v."${c}"`).join(", ")}
              from unnest(${arrays}) with ordinality as v(${names(columns)}, n)${after ? `, ${after}` : ""}
             order by v.n`;
  };
}

/** Runs one part as a statement of its own, with a tail (`on conflict …`, `returning …`); answers its rows. */
export function runPart<R>(tx: SqlTx, part: InsertPart, tail = ""): Promise<R[]> {
  const params: unknown[] = [];
  const text = part((value) => `$${params.push(value)}`);
  return tx.query<R>(tail ? `${text} ${tail}` : text, params);
}

/**
 * Runs several INSERTs (or other data-modifying parts) as one statement (data-modifying WITH clauses): one round
 * trip and one parse for a send's rows, or an inbound batch's. For rows counted in dozens or hundreds; a batch of
 * thousands goes through insertAll.
 */
export async function insertTogether(tx: SqlTx, parts: readonly InsertPart[]): Promise<void> {
  if (parts.length === 0) return;
  const params: unknown[] = [];
  const bind: Bind = (value) => `$${params.push(value)}`;
  const sql = parts.map((part) => part(bind));
  const last = sql.pop()!;
  await tx.query(sql.length === 0 ? last : `with ${sql.map((s, i) => `i${i} as (${s})`).join(", ")} ${last}`, params);
}
