// A table's columns as one list of [column, value of a row], from which its multi-row INSERT is made: the column
// names are written once, next to what goes into them, so the list and the values cannot drift apart.
import type { SqlTx } from "../database.js";
import { insertRows } from "../values.js";

export type Columns<T> = readonly (readonly [column: string, value: (row: T) => unknown])[];

/** JSON columns: node-postgres would send a JavaScript array as a PostgreSQL array, so JSON goes as text. */
export function json(value: unknown): string | null {
  return value === null ? null : JSON.stringify(value);
}

/** One INSERT of every row (split only past the wire protocol's parameter limit), every value bound. */
export function insertAll<T>(tx: SqlTx, table: string, columns: Columns<T>, rows: readonly T[]): Promise<void> {
  const head = `insert into ${table} (${columns.map(([c]) => `"${c}"`).join(", ")}) values`;
  return insertRows(tx, head, rows, (row, bind) => `(${columns.map(([, value]) => bind(value(row))).join(", ")})`);
}
