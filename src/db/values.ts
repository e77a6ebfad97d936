// Multi-row statements with every value a bound parameter (a Buffer travels as binary; inside an array it would
// travel as hex text), split only when a statement would pass the wire protocol's parameter limit.
import type { QueryOptions, SqlTx } from "./database.js";

/** Bound parameters per statement the wire protocol allows (a 16-bit count). */
const MAX_PARAMETERS = 65_535;

/** Binds a value and answers its placeholder (`$n`). */
export type Bind = (value: unknown) => string;

/** `<head> <rows>` with multi-row VALUES; see runValues. */
export function insertRows<T>(
  tx: SqlTx,
  head: string,
  items: readonly T[],
  row: (item: T, bind: Bind) => string,
  options?: QueryOptions,
): Promise<void> {
  return runValues(tx, (values) => `${head} ${values}`, items, row, options);
}

/**
 * Runs a statement over a VALUES list of items in as few statements as the parameter limit allows: one, unless
 * the items run to thousands of rows.
 */
export async function runValues<T>(
  tx: SqlTx,
  statement: (values: string) => string,
  items: readonly T[],
  row: (item: T, bind: Bind) => string,
  options?: QueryOptions,
): Promise<void> {
  let params: unknown[] = [];
  let rows: string[] = [];
  const bind: Bind = (value) => `$${params.push(value)}`;
  for (const item of items) {
    const before = params.length;
    const rendered = row(item, bind);
    if (params.length <= MAX_PARAMETERS || rows.length === 0) {
      rows.push(rendered);
      continue;
    }
    // The row does not fit: run the rows before it, and render it again as the first of the next statement.
    params.length = before;
    await tx.query(statement(rows.join(", ")), params, options);
    params = [];
    rows = [row(item, bind)];
  }
  if (rows.length > 0) await tx.query(statement(rows.join(", ")), params, options);
}
