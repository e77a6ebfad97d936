// Attachment identity and display names. Bytes are stored under a generated id; the sender's filename is only
// display metadata, and it is made harmless for whoever shows or saves it.

/** The spec's attachment id shape allows positions 1..999. */
export const MAX_ATTACHMENTS = 999;

const MAX_FILENAME_CHARS = 200;
const MAX_EXTENSION_CHARS = 16;

/** att_<the message id's hex>_<position>, position from 1. */
export function attachmentId(messageId: string, position: number): string {
  return `att_${messageId.slice("msg_".length)}_${position}`;
}

/**
 * A filename safe to display and to save: no directory part, no control or invisible formatting characters (a
 * right-to-left override turns "exe.pdf" around), none of the characters file systems refuse, no leading dot
 * (a hidden file) and a bounded length that keeps the extension. Nothing left → attachment-<position>.
 */
export function sanitizeFilename(name: string | null, position: number): string {
  const base = (name ?? "").split(/[/\\]/).pop() ?? "";
  const cleaned = base
    .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, "")
    .replace(/[<>:"|?*]/g, "_")
    .replace(/\s+/g, " ")
    .replace(/^[\s.]+|[\s.]+$/g, "");
  if (!cleaned) return `attachment-${position}`;
  const chars = [...cleaned];
  if (chars.length <= MAX_FILENAME_CHARS) return cleaned;
  const dot = cleaned.lastIndexOf(".");
  const extension = dot > 0 ? [...cleaned.slice(dot)] : [];
  const kept = extension.length <= MAX_EXTENSION_CHARS ? extension : [];
  return chars.slice(0, MAX_FILENAME_CHARS - kept.length).join("") + kept.join("");
}
