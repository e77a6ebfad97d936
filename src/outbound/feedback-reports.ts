// Complaints from ARF feedback reports (RFC 5965): mailbox providers send a report to the service's feedback
// address when one of their users marks a message of ours as spam. The report names the message by its
// Message-ID (in the returned message or its headers); we find the submission that sent it, record a complaint
// for the organization and suppress the complaining recipient, so nothing more is sent to them.
//
// The feedback address is public and its mail untrusted: a report must name a submission (by its Message-ID) and a
// recipient of that submission, and be authenticated (DKIM, SPF) as sent by a feedback loop or by that recipient
// itself (feedback-authentication.ts): the Message-ID alone is known to every recipient, and so are the others in To
// and Cc. Anything else is dropped with a log line, never an error, so a bad report is never
// retried; a complaint is recorded once per submission and recipient. The parser is small, linear and synchronous
// on purpose: it reads the headers of the top-level parts only, never a body beyond them, so it needs no parse
// budget of its own.
import type { Config } from "../config.js";
import type { Database, SqlTx } from "../db/database.js";
import { insertComplaint } from "../db/tables/complaints.js";
import { insertSuppressions } from "../db/tables/suppressions.js";
import { createConfiguredResolver } from "../dns/servers.js";
import { newUuid } from "../ids.js";
import type { Logger } from "../logger.js";
import { parseAddress } from "../validation/syntax.js";
import { createReportAuthenticator, vouchingFor, type ReportAuthenticator } from "./feedback-authentication.js";

/** What a feedback report says, as far as we use it. */
export interface FeedbackReport {
  /** Feedback-Type, lower-cased (abuse, fraud, virus, other, not-spam, …). */
  readonly feedbackType: string;
  /** User-Agent: the reporting system, or null when the report has none. */
  readonly userAgent: string | null;
  /** The recipients the report names (Original-Rcpt-To, Removal-Recipient), as written. */
  readonly recipients: readonly string[];
  /** The Message-ID of the reported message, in angle brackets, from the returned message or its headers. */
  readonly messageId: string | null;
}

export type FeedbackReportParse =
  | { readonly ok: true; readonly report: FeedbackReport }
  | { readonly ok: false; readonly problem: string };

/** Media types that carry the reported message (RFC 5965 §2 c; RFC 6533 for the internationalised forms). */
const RETURNED_MESSAGE_TYPES = new Set(["message/rfc822", "text/rfc822-headers", "message/global", "message/global-headers"]);
/** A feedback type is a token (RFC 5965 §7.3 registry); the column holds 64 characters. */
const FEEDBACK_TYPE = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** Longest User-Agent kept (the column's length). */
const MAX_USER_AGENT = 255;
/** Longest Message-ID believed (RFC 5322 line limit). */
const MAX_MESSAGE_ID = 998;
/** Most recipients taken from one report: a report is about one recipient; the rest is noise. */
const MAX_REPORTED_RECIPIENTS = 10;

/**
 * Reads an ARF report: a multipart/report with report-type=feedback-report, a message/feedback-report part and
 * the returned message (message/rfc822) or its headers (text/rfc822-headers). Bytes are read as Latin-1, one
 * character per byte, so nothing 8-bit can make the reading fail; the fields used are ASCII.
 */
export function parseFeedbackReport(raw: Uint8Array): FeedbackReportParse {
  const message = splitEntity(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString("latin1"));
  const type = contentTypeOf(message.headers);
  if (type.mediaType !== "multipart/report") return fail(`not a multipart/report (${type.mediaType})`);
  if (type.params.get("report-type")?.toLowerCase() !== "feedback-report") return fail("the report-type is not feedback-report");
  const boundary = type.params.get("boundary");
  if (!boundary) return fail("the multipart/report has no boundary");
  const parts = splitMultipart(message.body, boundary).map(splitEntity);

  const feedback = parts.find((p) => contentTypeOf(p.headers).mediaType === "message/feedback-report");
  if (!feedback) return fail("no message/feedback-report part");
  const fields = parseHeaders(decodeBody(feedback));
  const feedbackType = (firstValue(fields, "feedback-type") ?? "").toLowerCase();
  if (!FEEDBACK_TYPE.test(feedbackType)) return fail("the feedback report has no valid Feedback-Type");
  const userAgent = printable(firstValue(fields, "user-agent") ?? "").slice(0, MAX_USER_AGENT) || null;
  const recipients = fields
    .filter(([name]) => name === "original-rcpt-to" || name === "removal-recipient")
    .map(([, value]) => addressOf(value))
    .filter((a) => a !== "")
    .slice(0, MAX_REPORTED_RECIPIENTS);

  const returned = parts.find((p) => RETURNED_MESSAGE_TYPES.has(contentTypeOf(p.headers).mediaType));
  const returnedHeaders = returned ? parseHeaders(splitEntity(decodeBody(returned)).headers) : [];
  return { ok: true, report: { feedbackType, userAgent, recipients, messageId: messageIdOf(firstValue(returnedHeaders, "message-id")) } };
}

/** A Message-ID in angle brackets; RFC 5965's own example writes one without them, so a bare id@host is taken too. */
function messageIdOf(value: string | undefined): string | null {
  const text = (value ?? "").trim();
  const id = text.match(/<[^<>\s]+>/)?.[0] ?? (/^[^<>\s@]+@[^<>\s@]+$/.test(text) ? `<${text}>` : null);
  return id !== null && id.length <= MAX_MESSAGE_ID ? id : null;
}

function fail(problem: string): FeedbackReportParse {
  return { ok: false, problem };
}

interface Entity {
  /** The header section, unparsed. */
  readonly headers: string;
  readonly body: string;
}

/** Header section and body of a message or MIME part (CRLF or bare LF line ends). */
function splitEntity(text: string): Entity {
  // A part may have no headers at all: it then starts with the blank line.
  if (/^\r?\n/.test(text)) return { headers: "", body: text.replace(/^\r?\n/, "") };
  const end = /\r?\n\r?\n/.exec(text);
  if (!end) return { headers: text, body: "" };
  return { headers: text.slice(0, end.index), body: text.slice(end.index + end[0].length) };
}

type HeaderField = readonly [name: string, value: string];

/** Unfolds a header section into (lower-cased name, value) pairs, in order; lines that are no field are skipped. */
function parseHeaders(section: string): HeaderField[] {
  const fields: HeaderField[] = [];
  for (const line of section.split(/\r?\n/)) {
    const last = fields[fields.length - 1];
    if (/^[ \t]/.test(line)) {
      // RFC 5322 §2.2.3: a folded line continues the field above it.
      if (last) fields[fields.length - 1] = [last[0], `${last[1]} ${line.trim()}`];
      continue;
    }
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    fields.push([line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()]);
  }
  return fields;
}

function firstValue(fields: readonly HeaderField[], name: string): string | undefined {
  return fields.find(([n]) => n === name)?.[1];
}

interface ContentType {
  readonly mediaType: string;
  readonly params: ReadonlyMap<string, string>;
}

/** The Content-Type of an entity (RFC 2045 §5.1), text/plain when it has none. */
function contentTypeOf(headerSection: string): ContentType {
  const value = firstValue(parseHeaders(headerSection), "content-type");
  if (value === undefined) return { mediaType: "text/plain", params: new Map() };
  const [mediaType = "", ...rest] = splitParameters(value);
  const params = new Map<string, string>();
  for (const param of rest) {
    const eq = param.indexOf("=");
    if (eq <= 0) continue;
    let v = param.slice(eq + 1).trim();
    if (v.startsWith('"') && v.endsWith('"') && v.length >= 2) v = v.slice(1, -1).replace(/\\(.)/g, "$1");
    params.set(param.slice(0, eq).trim().toLowerCase(), v);
  }
  return { mediaType: mediaType.trim().toLowerCase(), params };
}

/** Splits a header value at semicolons outside quoted strings; comments are dropped. */
function splitParameters(value: string): string[] {
  const out: string[] = [];
  let current = "";
  let quoted = false;
  let comment = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (quoted) {
      current += c;
      if (c === "\\" && i + 1 < value.length) current += value[++i];
      else if (c === '"') quoted = false;
    } else if (comment > 0) {
      if (c === "(") comment++;
      else if (c === ")") comment--;
    } else if (c === '"') {
      quoted = true;
      current += c;
    } else if (c === "(") {
      comment = 1;
    } else if (c === ";") {
      out.push(current);
      current = "";
    } else {
      current += c;
    }
  }
  out.push(current);
  return out;
}

/** The body parts of a multipart body (RFC 2046 §5.1.1): preamble and epilogue dropped. */
function splitMultipart(body: string, boundary: string): string[] {
  const delimiter = `--${boundary}`;
  const parts: string[] = [];
  let current: string[] | null = null;
  for (const line of body.split(/\r?\n/)) {
    if (line.startsWith(delimiter)) {
      const rest = line.slice(delimiter.length);
      // Transport padding (trailing white space) may follow a delimiter; anything else makes it a body line.
      if (/^[ \t]*$/.test(rest) || /^--[ \t]*$/.test(rest)) {
        if (current) parts.push(current.join("\r\n"));
        if (rest.startsWith("--")) return parts;
        current = [];
        continue;
      }
    }
    current?.push(line);
  }
  // No close delimiter: what was read still counts (reports are often cut short by relays).
  if (current) parts.push(current.join("\r\n"));
  return parts;
}

/** A part's body with its Content-Transfer-Encoding undone, still one character per byte. */
function decodeBody(part: Entity): string {
  const encoding = (firstValue(parseHeaders(part.headers), "content-transfer-encoding") ?? "").toLowerCase();
  if (encoding === "base64") return Buffer.from(part.body.replace(/[^A-Za-z0-9+/]/g, ""), "base64").toString("latin1");
  if (encoding === "quoted-printable") {
    return part.body.replace(/=\r?\n/g, "").replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  }
  return part.body;
}

/** The address of an Original-Rcpt-To or Removal-Recipient value: bare, bracketed, or typed like a DSN's. */
function addressOf(value: string): string {
  const typed = /^rfc822\s*;\s*(.*)$/i.exec(value);
  const text = typed ? typed[1]! : value;
  const bracketed = /<([^<>]*)>/.exec(text);
  return printable(bracketed ? bracketed[1]! : text).trim();
}

/** Text without control characters (the report is the sender's; PostgreSQL refuses NUL). */
function printable(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f]/g, "").trim();
}

/** The lower-cased form validation uses, so suppressions and complaints match what send checks. */
export function normalizeRecipient(email: string): string {
  const parsed = parseAddress(email);
  return parsed.ok ? parsed.normalized : email.trim().toLowerCase();
}

/** A message to the feedback address as the smtp role committed it (the columns of its raw message row). */
export interface ReceivedReport {
  readonly raw: Uint8Array;
  /** MAIL FROM; empty for the null reverse-path. */
  readonly mail_from: string;
  readonly remote_ip: string;
  readonly helo: string;
}

export interface FeedbackReports {
  /** The address reports are received at (FEEDBACK_ADDRESS), lower-cased. */
  readonly address: string;
  /**
   * Reads a received report and checks who sent it (DKIM and SPF: DNS lookups, so before and outside the
   * transaction that consumes the raw message). Resolves to what to record; a message that is no usable report, or
   * is not believed, records nothing and is dropped with a log line. Rejects only on database errors.
   */
  check(message: ReceivedReport, rawId: string): Promise<CheckedReport>;
}

export interface CheckedReport {
  /**
   * Records the complaints in the caller's transaction (the one that claims the raw message): at most one per
   * submission and recipient, however often the report arrives, and a suppression with the first of them.
   */
  record(tx: SqlTx): Promise<void>;
}

interface SubmissionRecipientRow {
  readonly id: string;
  readonly organization_id: string;
  /** Null for a submission without recipient rows. */
  readonly email: string | null;
}

const NOTHING_TO_RECORD: CheckedReport = { record: async () => undefined };

export interface FeedbackReportsDeps {
  readonly address: string;
  /** FEEDBACK_LOOP_SENDERS: domains and addresses believed about any recipient. */
  readonly feedbackLoopSenders: readonly string[];
  readonly db: Database;
  readonly authenticator: ReportAuthenticator;
  readonly log: Logger;
}

/** The feedback reports of this configuration: its address and loops, DKIM and SPF over DNS_SERVERS. */
export function createConfiguredFeedbackReports(config: Config, db: Database, log: Logger): FeedbackReports {
  return createFeedbackReports({
    address: config.feedbackAddress,
    feedbackLoopSenders: config.feedbackLoopSenders,
    db,
    authenticator: createReportAuthenticator({ resolver: createConfiguredResolver(config), hostname: config.smtp.hostname }),
    log,
  });
}

export function createFeedbackReports(deps: FeedbackReportsDeps): FeedbackReports {
  const { db, log } = deps;
  const drop = (rawId: string, why: string, fields: Record<string, unknown> = {}): CheckedReport => {
    log.info("feedback message dropped", { rawId, why, ...fields });
    return NOTHING_TO_RECORD;
  };

  return {
    address: deps.address,
    async check(message, rawId) {
      const parsed = parseFeedbackReport(message.raw);
      if (!parsed.ok) return drop(rawId, parsed.problem);
      const { report } = parsed;
      // RFC 6430's not-spam says the opposite of a complaint: nothing to record, nobody to suppress.
      if (report.feedbackType === "not-spam") return drop(rawId, "a not-spam report is no complaint");
      if (report.messageId === null) return drop(rawId, "the report names no Message-ID");

      // One query: the submission with this Message-ID, its organization and its recipients. Outside any
      // transaction: a submission's Message-ID and recipients never change.
      const rows = await db.sql.query<SubmissionRecipientRow>(
        `select s.id, s.organization_id, r.email
           from submissions s
           left join submission_recipients r on r.submission_id = s.id and r.organization_id = s.organization_id
          where s.internet_message_id = $1`,
        [report.messageId],
      );
      const submissionIds = new Set(rows.map((r) => r.id));
      if (submissionIds.size === 0) return drop(rawId, "no submission has this Message-ID", { messageId: report.messageId });
      // Message-IDs are generated per submission; two matches mean it was not ours to begin with.
      if (submissionIds.size > 1) return drop(rawId, "several submissions have this Message-ID", { messageId: report.messageId });
      const { id: submissionId, organization_id: organizationId } = rows[0]!;
      const sentTo = new Set(rows.flatMap((r) => (r.email === null ? [] : [normalizeRecipient(r.email)])));
      const named = [...new Set(report.recipients.map(normalizeRecipient))];
      // A report that names nobody (providers may redact the recipient) is about the only recipient, if one.
      const complaining = named.length > 0 ? named.filter((e) => sentTo.has(e)) : sentTo.size === 1 ? [...sentTo] : [];
      if (complaining.length === 0) {
        return drop(rawId, named.length > 0 ? "the named recipient is not one of the submission's" : "the report names no recipient", {
          submissionId,
        });
      }

      // Only now, for a report about a real recipient, the DNS work of DKIM and SPF.
      const identities = await deps.authenticator.authenticate(message.raw, {
        remoteIp: message.remote_ip,
        helo: message.helo,
        mailFrom: message.mail_from,
      });
      const believed = complaining.flatMap((email) => {
        const by = vouchingFor(identities, email, deps.feedbackLoopSenders);
        return by ? [{ email, by }] : [];
      });
      if (believed.length === 0) {
        return drop(rawId, "the report is authenticated neither as a feedback loop nor as the recipient", {
          submissionId,
          authentication: identities.summary,
        });
      }

      return {
        async record(tx) {
          const now = new Date();
          const detail = `${report.feedbackType} report${report.userAgent ? ` by ${report.userAgent}` : ""} about ${report.messageId}`;
          let recorded = 0;
          for (const { email } of believed) {
            // Once per submission and recipient: a report sent again (or replayed) adds nothing.
            const complaint = { id: newUuid(), organizationId, email, feedbackType: report.feedbackType, submissionId, userAgent: report.userAgent, createdAt: now };
            if (!(await insertComplaint(tx, complaint))) continue;
            recorded++;
            // An address suppressed already (a hard bounce, an earlier complaint) keeps its first reason; one the
            // organization removed since the first complaint is not suppressed again by a repeat of it.
            await insertSuppressions(tx, [{ organizationId, email, reason: "complaint", detail, createdAt: now }]);
          }
          log.info("feedback report recorded", {
            rawId,
            submissionId,
            organizationId,
            feedbackType: report.feedbackType,
            recipients: recorded,
            repeated: believed.length - recorded,
            believedAs: [...new Set(believed.map((b) => b.by))],
            authentication: identities.summary,
          });
        },
      };
    },
  };
}
