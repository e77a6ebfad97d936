// How every connection of this service reaches Temporal: the one place TLS, mTLS and the API key are applied, for
// the client connections (Connection) and the worker's (NativeConnection) alike.
import { readFile } from "node:fs/promises";
import { isIP } from "node:net";
import { checkServerIdentity, connect as connectTls } from "node:tls";
import type { TLSConfig } from "@temporalio/client";
import type { TemporalAccess } from "../config.js";

export type { TemporalAccess };

/** Plaintext, no key: the embedded dev server, and tests. */
export const PLAINTEXT: TemporalAccess = { tls: undefined, apiKey: undefined };

export interface TemporalConnectOptions {
  readonly address: string;
  readonly tls?: TLSConfig;
  readonly apiKey?: string;
}

/** The connect options of `address` under `access`, with the PEM files read now (a missing file fails here, by name). */
export async function temporalConnectOptions(address: string, access: TemporalAccess): Promise<TemporalConnectOptions> {
  const { tls, apiKey } = access;
  if (!tls) return { address, ...(apiKey ? { apiKey } : {}) };
  const read = async (what: string, path: string) => {
    try {
      return await readFile(path);
    } catch (e) {
      throw new Error(`cannot read ${what} ${path}: ${(e as Error).message}`);
    }
  };
  const config: TLSConfig = {
    ...(tls.serverName ? { serverNameOverride: tls.serverName } : {}),
    ...(tls.caPath ? { serverRootCACertificate: await read("TEMPORAL_TLS_CA", tls.caPath) } : {}),
    ...(tls.certPath && tls.keyPath
      ? { clientCertPair: { crt: await read("TEMPORAL_TLS_CERT", tls.certPath), key: await read("TEMPORAL_TLS_KEY", tls.keyPath) } }
      : {}),
  };
  return { address, tls: config, ...(apiKey ? { apiKey } : {}) };
}

/** How long the diagnosis of a failed connection waits for the handshake, and then for the server to refuse it. */
const DIAGNOSIS_MS = 5_000;
const REFUSAL_WAIT_MS = 1_000;

/**
 * Connects with `connect`; a failure over TLS says why the handshake fails when it does (the SDKs report only
 * "Failed to connect before the deadline"): a direct TLS handshake with the same CA, name and certificate tells.
 */
export async function connectDiagnosed<C>(options: TemporalConnectOptions, connect: (options: TemporalConnectOptions) => Promise<C>): Promise<C> {
  try {
    return await connect(options);
  } catch (e) {
    const reason = options.tls ? await tlsHandshakeFailure(options.address, options.tls) : undefined;
    const via = options.tls ? "over TLS" : "in plaintext";
    throw new Error(
      `cannot connect to Temporal at ${options.address} ${via}: ${reason ? `TLS handshake failed: ${reason} (check TEMPORAL_TLS_CA, TEMPORAL_TLS_SERVER_NAME, TEMPORAL_TLS_CERT/KEY)` : (e as Error).message}`,
      { cause: e },
    );
  }
}

/** The error of a TLS handshake with `address` as the SDK would make it, or undefined when it succeeds. */
async function tlsHandshakeFailure(address: string, config: TLSConfig): Promise<string | undefined> {
  const colon = address.lastIndexOf(":");
  const host = address.slice(0, colon).replace(/^\[|\]$/g, "");
  const socket = connectTls({
    host,
    port: Number(address.slice(colon + 1)),
    servername: config.serverNameOverride ?? (isIP(host) ? undefined : host),
    ...(config.serverNameOverride ? { checkServerIdentity: (_: string, cert) => checkServerIdentity(config.serverNameOverride!, cert) } : {}),
    ...(config.serverRootCACertificate ? { ca: Buffer.from(config.serverRootCACertificate) } : {}),
    ...(config.clientCertPair ? { cert: Buffer.from(config.clientCertPair.crt), key: Buffer.from(config.clientCertPair.key) } : {}),
    ALPNProtocols: ["h2"],
  });
  try {
    return await new Promise<string | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), DIAGNOSIS_MS);
      socket.once("error", (e: Error) => {
        clearTimeout(timer);
        resolve(e.message);
      });
      // TLS 1.3 servers check the client's certificate after the client's handshake is done: wait for a refusal.
      socket.once("secureConnect", () => {
        clearTimeout(timer);
        setTimeout(() => resolve(undefined), REFUSAL_WAIT_MS);
      });
    });
  } finally {
    socket.destroy();
  }
}
