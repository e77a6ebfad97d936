// Role accounts: local parts that name a function rather than a person. Mail to them reaches a team or a ticket
// queue, often a list that many people read, so validators flag them as risky rather than undeliverable.
// RFC 2142 §§3-5 defines the mailbox names; the rest are the role names major validation services flag.
const ROLE_LOCAL_PARTS: ReadonlySet<string> = new Set([
  // RFC 2142
  "info", "marketing", "sales", "support", "abuse", "noc", "security", "postmaster", "hostmaster", "usenet", "news",
  "webmaster", "www", "uucp", "ftp",
  // Common role and system names
  "admin", "administrator", "root", "mailer-daemon", "nobody", "noreply", "no-reply", "donotreply", "do-not-reply",
  "billing", "accounts", "accounting", "contact", "help", "helpdesk", "office", "team", "hr", "jobs", "careers",
  "press", "media", "privacy", "legal", "compliance", "feedback", "hello", "enquiries", "inquiries", "orders",
  "service", "customerservice", "list", "list-request", "majordomo", "bounce", "bounces",
]);

/** Whether a (lower-case, unquoted) local part is a role account; a +tag does not hide it (sales+eu is sales). */
export function isRoleAccount(localPart: string): boolean {
  const base = localPart.split("+", 1)[0]!;
  return ROLE_LOCAL_PARTS.has(base);
}
