// The smtp role makes a self-signed STARTTLS certificate when its DATA_DIR has none (src/mail/tls-certificate.ts):
// an RSA 2048 key, ~90 ms of CPU at every start on a fresh directory, and tests start smtp roles on fresh directories
// dozens of times a run. The global setup makes one pair for the harness's host name; a test role's DATA_DIR gets a
// copy, which the role takes as one its own earlier start left there. Generating one stays covered by the starts
// on a fresh data directory of their own (test/e2e/start.test.ts, the fault stacks) and by any other host name.
import { constants as fsConstants } from "node:fs";
import { copyFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { inject } from "vitest";
import { loadTlsCertificate } from "../../src/mail/tls-certificate.js";

/** The harness's MANAGED_DOMAIN, and so its smtp roles' host name (SMTP_HOSTNAME defaults to it). */
export const TEST_MANAGED_DOMAIN = "agents.test";
/** Where the pair lives under a data directory, as loadTlsCertificate keeps it. */
const TLS_DIR = "smtp-tls";
const FILES = ["cert.pem", "key.pem"];

/** Made by the global setup: `<seedDir>/smtp-tls/{cert,key}.pem`, for `hostname`. */
export interface SmtpTlsSeed {
  readonly seedDir: string;
  readonly hostname: string;
}

export async function makeSmtpTlsSeed(seedDir: string, hostname: string): Promise<SmtpTlsSeed> {
  await loadTlsCertificate({ certPath: undefined, keyPath: undefined, dataDir: seedDir, hostname });
  return { seedDir, hostname };
}

/**
 * Copies the run's pair into `dataDir` when the role will serve `hostname` and the directory has no pair yet (a pair
 * made for another name would present that name).
 */
export async function seedSmtpTls(dataDir: string, hostname: string): Promise<void> {
  const seed = inject("smtpTlsSeed");
  if (seed.hostname !== hostname) return;
  const target = join(dataDir, TLS_DIR);
  await mkdir(target, { recursive: true, mode: 0o700 });
  for (const file of FILES) {
    // A pair the directory already holds is the role's own and stays.
    await copyFile(join(seed.seedDir, TLS_DIR, file), join(target, file), fsConstants.COPYFILE_EXCL).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== "EEXIST") throw e;
    });
  }
}
