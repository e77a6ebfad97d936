// TLS of every PostgreSQL connection (the ORM's pool, the plain-SQL pool, the LISTEN client): DATABASE_SSL_MODE and
// DATABASE_SSL_CA, else the URL's own sslmode / sslrootcert, applied the libpq way. The ssl parameters are taken
// out of the URL because pg lets a URL's sslmode override an explicit ssl option, and MikroORM ignores them.
import { readFile } from "node:fs/promises";
import type { ConnectionOptions } from "node:tls";
import type { DatabaseSettings, DatabaseSslMode } from "../config.js";

export type DatabaseTls = Pick<DatabaseSettings, "sslMode" | "sslCaPath">;

export interface PgConnection {
  /** The URL without its ssl parameters. */
  readonly url: string;
  /** pg's `ssl` option: false for plaintext. */
  readonly ssl: false | ConnectionOptions;
}

const MODES: readonly string[] = ["disable", "require", "verify-ca", "verify-full"] satisfies DatabaseSslMode[];
const SSL_PARAMS = ["sslmode", "sslrootcert", "sslcert", "sslkey", "ssl", "uselibpqcompat"];

export async function pgConnectionOf(url: string, tls: DatabaseTls = { sslMode: undefined, sslCaPath: undefined }): Promise<PgConnection> {
  const parsed = new URL(url);
  const params = parsed.searchParams;
  const urlMode = params.get("sslmode") ?? undefined;
  // libpq's prefer and allow fall back to plaintext; pg cannot, and a silent downgrade is what TLS is set to prevent.
  if (urlMode !== undefined && !MODES.includes(urlMode)) {
    throw new Error(`DATABASE_URL's sslmode must be one of ${MODES.join(", ")}, got "${urlMode}"`);
  }
  const mode = tls.sslMode ?? (urlMode as DatabaseSslMode | undefined) ?? "disable";
  const caPath = tls.sslCaPath ?? params.get("sslrootcert") ?? undefined;
  const certPath = params.get("sslcert") ?? undefined;
  const keyPath = params.get("sslkey") ?? undefined;
  for (const name of SSL_PARAMS) params.delete(name);
  const stripped = parsed.toString();
  if (mode === "disable") return { url: stripped, ssl: false };
  const read = async (what: string, path: string) => {
    try {
      return await readFile(path, "utf8");
    } catch (e) {
      throw new Error(`cannot read the PostgreSQL ${what} ${path}: ${(e as Error).message}`);
    }
  };
  const ssl: ConnectionOptions = {
    ...(caPath ? { ca: await read("CA", caPath) } : {}),
    ...(certPath && keyPath ? { cert: await read("client certificate", certPath), key: await read("client key", keyPath) } : {}),
    // require: encrypted, the certificate unchecked; verify-ca: signed by the CA, any name; verify-full: and the host's name.
    ...(mode === "require" ? { rejectUnauthorized: false } : {}),
    ...(mode === "verify-ca" ? { checkServerIdentity: () => undefined } : {}),
  };
  return { url: stripped, ssl };
}
