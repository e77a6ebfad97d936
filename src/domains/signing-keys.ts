// The DKIM signing key of an organization's domain, for outbound delivery (nodemailer's dkim option takes this
// shape). Whether the domain may send at all is requireOutbound's question, asked before.
import type { Database } from "../db/database.js";
import { CustomerDomain } from "../db/entities/index.js";
import { systemStore } from "../db/system-store.js";
import { toAsciiDomain } from "../dns/names.js";
import type { DkimKeyVault } from "./dkim-keys.js";

export interface DkimSigningKey {
  readonly domainName: string;
  readonly keySelector: string;
  /** PKCS#8 PEM. */
  readonly privateKey: string;
}

export type DkimSigningKeys = ReturnType<typeof createDkimSigningKeys>;

export function createDkimSigningKeys(deps: { readonly db: Database; readonly vault: DkimKeyVault }) {
  return {
    /** The key of the organization's domain, decrypted; undefined when the organization has no such domain. */
    async dkimKeyFor(organizationId: string, domain: string): Promise<DkimSigningKey | undefined> {
      const ascii = toAsciiDomain(domain);
      if (!ascii.ok) return undefined;
      const row = await systemStore(deps.db).findOne(CustomerDomain, { organization: organizationId, domain: ascii.domain });
      if (!row) return undefined;
      return { domainName: row.domain, keySelector: row.dkimSelector, privateKey: deps.vault.open(row.id, row.dkimPrivateKeyEncrypted) };
    },
  };
}
