// The STARTTLS certificate: the configured PEM files, or a self-signed one kept under DATA_DIR so that an embedded
// start offers encryption with nothing to set up (senders do not verify certificates for opportunistic STARTTLS).
import { X509Certificate } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { generate } from "selfsigned";

export interface TlsCertificate {
  readonly cert: string;
  readonly key: string;
}

export interface TlsCertificateSource {
  readonly certPath: string | undefined;
  readonly keyPath: string | undefined;
  readonly dataDir: string;
  /** The name the certificate is made for when it is generated. */
  readonly hostname: string;
}

/** A generated certificate is replaced when it expires within this time. */
const RENEW_BEFORE_MS = 30 * 86_400_000;
const VALID_FOR_MS = 365 * 86_400_000;

export async function loadTlsCertificate(source: TlsCertificateSource): Promise<TlsCertificate> {
  if (source.certPath && source.keyPath) {
    return { cert: await readFile(source.certPath, "utf8"), key: await readFile(source.keyPath, "utf8") };
  }
  const dir = join(source.dataDir, "smtp-tls");
  const certFile = join(dir, "cert.pem");
  const keyFile = join(dir, "key.pem");
  const existing = await readPair(certFile, keyFile);
  if (existing && new X509Certificate(existing.cert).validToDate.getTime() - Date.now() > RENEW_BEFORE_MS) return existing;

  const now = new Date();
  const pems = await generate([{ name: "commonName", value: source.hostname }], {
    keySize: 2048,
    algorithm: "sha256",
    notBeforeDate: now,
    notAfterDate: new Date(now.getTime() + VALID_FOR_MS),
    extensions: [
      { name: "basicConstraints", cA: false },
      { name: "keyUsage", digitalSignature: true, keyEncipherment: true },
      { name: "extKeyUsage", serverAuth: true },
      { name: "subjectAltName", altNames: [{ type: 2, value: source.hostname }] },
    ],
  });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // Written aside, then renamed: a process starting at the same moment reads a whole pair or none.
  const suffix = `.${process.pid}.tmp`;
  await writeFile(keyFile + suffix, pems.private, { mode: 0o600 });
  await writeFile(certFile + suffix, pems.cert, { mode: 0o644 });
  await rename(keyFile + suffix, keyFile);
  await rename(certFile + suffix, certFile);
  return { cert: pems.cert, key: pems.private };
}

async function readPair(certFile: string, keyFile: string): Promise<TlsCertificate | null> {
  try {
    return { cert: await readFile(certFile, "utf8"), key: await readFile(keyFile, "utf8") };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
}
