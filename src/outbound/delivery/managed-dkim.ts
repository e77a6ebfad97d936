// The DKIM key of the managed domain: MANAGED_DKIM_KEY (a PEM private key), else one RSA-2048 key generated once
// and kept under DATA_DIR (every process of one DATA_DIR signs alike; set MANAGED_DKIM_KEY when processes do not
// share a DATA_DIR). The operator publishes its public half as TXT at <selector>._domainkey.<managed domain>:
// `managedDkimRecord` prints it (README, "Delivery").
import { createPrivateKey, createPublicKey, randomBytes } from "node:crypto";
import { link, mkdir, readFile, unlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Config } from "../../config.js";
import { generateDkimKeyPair } from "../../domains/dkim-keys.js";
import type { DkimSigningKey } from "../../domains/signing-keys.js";

type ManagedDkimConfig = Pick<Config, "managedDomain" | "dataDir"> & { delivery: Pick<Config["delivery"], "managedDkimSelector" | "managedDkimKeyPath"> };

/** Where the generated key is kept when MANAGED_DKIM_KEY is unset. */
export function generatedManagedDkimKeyPath(config: Pick<Config, "dataDir">): string {
  return join(config.dataDir, "managed-dkim-key.pem");
}

/** The managed domain's signing key (nodemailer's dkim option shape), generating it on first use. */
export async function loadManagedDkimKey(config: ManagedDkimConfig): Promise<DkimSigningKey> {
  const privateKey = config.delivery.managedDkimKeyPath
    ? await readFile(config.delivery.managedDkimKeyPath, "utf8")
    : await generatedKey(generatedManagedDkimKeyPath(config));
  createPrivateKey(privateKey); // a broken file fails here, at start, not at the first send
  return { domainName: config.managedDomain, keySelector: config.delivery.managedDkimSelector, privateKey };
}

async function generatedKey(file: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  const { privateKeyPem } = await generateDkimKeyPair();
  await mkdir(dirname(file), { recursive: true });
  // Written aside, then linked into place: of two processes generating at once the first link wins, and neither
  // ever reads a half-written file.
  const aside = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
  await writeFile(aside, privateKeyPem, { mode: 0o600 });
  try {
    await link(aside, file).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== "EEXIST") throw e;
    });
  } finally {
    await unlink(aside);
  }
  return readFile(file, "utf8");
}

/** The DNS TXT record that publishes a DKIM key's public half (RFC 6376 §3.6.1). */
export function dkimTxtRecord(key: DkimSigningKey): { name: string; type: "TXT"; value: string } {
  const spki = createPublicKey(key.privateKey).export({ type: "spki", format: "der" }).toString("base64");
  return { name: `${key.keySelector}._domainkey.${key.domainName}`, type: "TXT", value: `v=DKIM1; k=rsa; p=${spki}` };
}

/** The managed domain's DKIM record, for the operator to publish. */
export async function managedDkimRecord(config: ManagedDkimConfig): Promise<{ name: string; type: "TXT"; value: string }> {
  return dkimTxtRecord(await loadManagedDkimKey(config));
}

/** loadManagedDkimKey, loaded (or generated) on first use and then kept; a failed load is tried again next time. */
export function managedDkimKeySource(config: ManagedDkimConfig): () => Promise<DkimSigningKey> {
  let key: Promise<DkimSigningKey> | undefined;
  return () => {
    key ??= loadManagedDkimKey(config).catch((e: unknown) => {
      key = undefined;
      throw e;
    });
    return key;
  };
}
