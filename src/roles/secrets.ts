// Secrets a process needs that an operator may leave unset: configured, or generated once and kept under DATA_DIR,
// so that every role and restart of one installation uses the same one.
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Config } from "../config.js";

/** The cursor-signing secret: configured, or generated once and kept under DATA_DIR. */
export function cursorSecretOf(config: Config): Promise<string> {
  return persistedSecret(config, config.cursorSecret, "cursor-secret");
}

/** The key that seals DKIM private keys: configured, or generated once and kept under DATA_DIR. */
export function dkimKeySecretOf(config: Config): Promise<string> {
  return persistedSecret(config, config.customerDomains.dkimKeySecret, "dkim-key-secret");
}

async function persistedSecret(config: Config, configured: string | undefined, fileName: string): Promise<string> {
  if (configured) return configured;
  const file = join(config.dataDir, fileName);
  try {
    return (await readFile(file, "utf8")).trim();
  } catch {
    const secret = randomBytes(32).toString("base64url");
    await mkdir(config.dataDir, { recursive: true });
    await writeFile(file, secret, { mode: 0o600, flag: "wx" }).catch(() => undefined);
    return (await readFile(file, "utf8")).trim();
  }
}
