// DKIM key pairs of customer domains. RSA 2048 is what every verifier accepts (RFC 8301 §3.2 requires at least
// 1024 bits and recommends 2048; Ed25519 keys of RFC 8463 are not verified everywhere yet). The private key is
// stored sealed with AES-256-GCM under a key derived from configuration, and bound to its domain's id, so a
// sealed key copied onto another row does not open.
import { createCipheriv, createDecipheriv, generateKeyPair, hkdfSync, randomBytes } from "node:crypto";
import { promisify } from "node:util";

const generate = promisify(generateKeyPair);

export interface DkimKeyPair {
  /** The base64 DER SubjectPublicKeyInfo: the p= tag of the DKIM record. */
  readonly publicKey: string;
  /** PKCS#8 PEM. */
  readonly privateKeyPem: string;
}

export async function generateDkimKeyPair(): Promise<DkimKeyPair> {
  const { publicKey, privateKey } = await generate("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "der" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  return { publicKey: publicKey.toString("base64"), privateKeyPem: privateKey };
}

export interface DkimKeyVault {
  /** iv.tag.ciphertext, base64url. */
  seal(domainId: string, privateKeyPem: string): string;
  open(domainId: string, sealed: string): string;
}

export function createDkimKeyVault(secret: string): DkimKeyVault {
  const key = Buffer.from(hkdfSync("sha256", secret, "", "mailbox dkim private key v1", 32));
  return {
    seal(domainId, privateKeyPem) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv).setAAD(Buffer.from(domainId));
      const ciphertext = Buffer.concat([cipher.update(privateKeyPem, "utf8"), cipher.final()]);
      return [iv, cipher.getAuthTag(), ciphertext].map((b) => b.toString("base64url")).join(".");
    },
    open(domainId, sealed) {
      const [iv, tag, ciphertext] = sealed.split(".").map((part) => Buffer.from(part, "base64url"));
      if (!iv || !tag || !ciphertext) throw new Error("a sealed DKIM key has three parts");
      const decipher = createDecipheriv("aes-256-gcm", key, iv).setAAD(Buffer.from(domainId)).setAuthTag(tag);
      return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString("utf8");
    },
  };
}
