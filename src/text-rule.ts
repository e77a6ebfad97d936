// The rule for text the contract accepts (proto/mailbox/v1/options.proto, FieldRule): every request string is
// Unicode text PostgreSQL can store, so no NUL (text and jsonb refuse it) and no unpaired UTF-16 surrogate (not
// Unicode at all); a name people read also has no control characters and no bidirectional embedding, override
// or isolate characters, which can make a name read as another address.

/** C0 controls, DEL, C1 controls, and the bidi embeddings, overrides (U+202A..U+202E) and isolates (U+2066..U+2069). */
export const NAME_FORBIDDEN = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;

// The same rules as JSON Schema patterns for the OpenAPI document: \uXXXX escapes read alike in ECMA-262, Python
// and Rust regular expressions. An unpaired surrogate has no pattern: JSON Schema strings are Unicode already.
export const TEXT_PATTERN = "^[^\\u0000]*$";
export const NAME_PATTERN = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069]*$";

/** Why a request string is not text the contract accepts, or undefined when it is. */
export function textProblem(s: string): string | undefined {
  if (s.includes("\u0000")) return "must not contain NUL (U+0000)";
  if (!isWellFormed(s)) return "must be Unicode text (it has an unpaired surrogate)";
  return undefined;
}

/** Why a request string is not a name the contract accepts, or undefined when it is. */
export function nameProblem(s: string): string | undefined {
  return textProblem(s) ?? (NAME_FORBIDDEN.test(s) ? "must not contain control or bidirectional-override characters" : undefined);
}

// String.prototype.isWellFormed is ES2024 (Node 20+), newer than the project's ES2023 lib.
function isWellFormed(s: string): boolean {
  return (s as string & { isWellFormed(): boolean }).isWellFormed();
}
