// The benchmark's test message: plain text, a fixed total size, and a token in its Message-ID and Subject so a
// stored message (messages.internet_message_id) and its webhook can be traced back to the moment it was sent.

/** Right-hand side of every bench Message-ID: `<token@MESSAGE_ID_DOMAIN>`. */
export const MESSAGE_ID_DOMAIN = "bench.localhost";

const LINE = "The quick brown fox jumps over the lazy dog, again and again, to fill a benchmark message.";

/** A body of `bytes` bytes (CRLF lines, none starting with a dot), so header + body come to the size asked for. */
function filler(bytes: number): string {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    let line = `${String(i).padStart(4, "0")} ${LINE}`;
    if (size + line.length + 2 > bytes) line = "x".repeat(Math.max(0, bytes - size - 2));
    lines.push(line);
    size += line.length + 2;
  }
  return lines.join("\r\n") + "\r\n";
}

export interface MessageTemplate {
  readonly from: string;
  readonly to: string;
  /** Total size of the message as sent (headers, blank line and body, without the final dot). */
  readonly bytes: number;
}

/** Headers with the token, and the body shared by every message of a run (the body is the bulk of the bytes). */
export function headerFor(template: MessageTemplate, to: string, token: string | null): string {
  return (
    `From: Bench Sender <${template.from}>\r\n` +
    `To: <${to}>\r\n` +
    `Subject: bench message ${token ?? ""}\r\n` +
    `Date: ${new Date().toUTCString().replace("GMT", "+0000")}\r\n` +
    (token ? `Message-ID: <${token}@${MESSAGE_ID_DOMAIN}>\r\n` : "") +
    `MIME-Version: 1.0\r\n` +
    `Content-Type: text/plain; charset=utf-8\r\n` +
    `Content-Transfer-Encoding: 7bit\r\n\r\n`
  );
}

/** A body that makes a message with a header of `headerBytes` exactly `template.bytes` long. */
export function bodyFor(template: MessageTemplate, headerBytes: number): string {
  return filler(Math.max(2, template.bytes - headerBytes));
}

/** A whole message without a Message-ID (the server or MTA gives one), for smtp-source -F. */
export function staticMessage(template: MessageTemplate): string {
  const header = headerFor(template, template.to, null);
  return header + bodyFor(template, Buffer.byteLength(header));
}

/** The token of a Message-ID made by headerFor, or undefined for any other. */
export function tokenOf(internetMessageId: string): string | undefined {
  const m = /^<([^@>]+)@bench\.localhost>$/.exec(internetMessageId);
  return m?.[1];
}
