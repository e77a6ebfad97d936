// Reading back the text of an MCP tool result that carries mail (src/mcp/envelope.ts) as a model would: the note,
// the service's JSON outside the envelopes, and each envelope's content, split only at markers with the result's
// nonce.

export interface EnvelopedText {
  readonly nonce: string;
  /** The JSON outside the envelopes: ids, the service's verdict on each message, cursors. */
  readonly frame: any;
  /** Each envelope's content, parsed, by its id (a message, a thread, or "attachment"). */
  readonly envelopes: ReadonlyMap<string, any>;
  /** The raw text of each envelope's content. */
  readonly raw: ReadonlyMap<string, string>;
}

export function readEnvelopes(text: string): EnvelopedText {
  const [note, frameLine, ...rest] = text.split("\n");
  const nonce = /nonce="([0-9a-f]{32})"/.exec(note!)?.[1];
  if (!nonce) throw new Error(`no nonce in the note: ${note}`);
  const pattern = new RegExp(`^<untrusted-email id="([^"]+)" nonce="${nonce}">\\n([^\\n]*)\\n</untrusted-email nonce="${nonce}">$`, "gm");
  const body = rest.join("\n");
  const raw = new Map<string, string>();
  const outside = body.replace(pattern, (_all, id: string, content: string) => (raw.set(id, content), "")).trim();
  if (outside !== "") throw new Error(`text outside the envelopes after the frame: ${outside.slice(0, 200)}`);
  return { nonce, frame: JSON.parse(frameLine!), raw, envelopes: new Map([...raw].map(([id, content]) => [id, JSON.parse(content)])) };
}

/** Every message (an object with a msg_ id) of a structured answer. */
export function messagesIn(value: unknown): any[] {
  if (Array.isArray(value)) return value.flatMap(messagesIn);
  if (value === null || typeof value !== "object") return [];
  const object = value as Record<string, unknown>;
  if (typeof object.id === "string" && object.id.startsWith("msg_")) return [object];
  return Object.values(object).flatMap(messagesIn);
}
