// A Server-Sent Events reader over fetch, reading the body as it comes (no EventSource in Node): what a client of
// GET /v1/events:stream sees, frame by frame, comments included.

export interface SseFrame {
  /** The id: line, when the frame has one. */
  readonly id?: string;
  /** The event: line, when the frame has one. */
  readonly event?: string;
  /** The data: lines joined by "\n"; undefined for a frame of comments only. */
  readonly data?: string;
  /** The comment lines (": keep-alive" → "keep-alive"). */
  readonly comments: readonly string[];
}

export interface SseStream {
  readonly status: number;
  readonly headers: Headers;
  /** The body of an answer that is not a stream (an error), parsed as JSON. */
  readonly error: { error: string; message: string } | undefined;
  /** The next frame; rejects after `timeoutMs`, resolves undefined when the stream ended. */
  next(timeoutMs?: number): Promise<SseFrame | undefined>;
  /** The next frame that carries data (keep-alives skipped). */
  nextEvent(timeoutMs?: number): Promise<SseFrame>;
  close(): void;
}

export async function openSse(url: string, headers: Record<string, string>): Promise<SseStream> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: abort.signal });
  if (!(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    const error = (await res.json()) as { error: string; message: string };
    return { status: res.status, headers: res.headers, error, next: async () => undefined, nextEvent: () => Promise.reject(new Error(error.error)), close: () => undefined };
  }
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let ended = false;
  // A read that outlived a timeout is kept for the next call, so no chunk is lost.
  let pending: ReturnType<typeof reader.read> | undefined;

  async function next(timeoutMs = 20_000): Promise<SseFrame | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const end = buffer.indexOf("\n\n");
      if (end !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        return parseFrame(block);
      }
      if (ended) return undefined;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("no server-sent event in time")), Math.max(0, deadline - Date.now()));
      });
      try {
        if (!pending) {
          pending = reader.read();
          // Closing aborts a read nobody waits for any more.
          pending.catch(() => undefined);
        }
        const chunk = await Promise.race([pending, timeout]);
        pending = undefined;
        if (chunk.done) ended = true;
        else buffer += chunk.value;
      } finally {
        clearTimeout(timer);
      }
    }
  }

  return {
    status: res.status,
    headers: res.headers,
    error: undefined,
    next,
    async nextEvent(timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const frame = await next(Math.max(0, deadline - Date.now()));
        if (!frame) throw new Error("the stream ended");
        if (frame.data !== undefined) return frame;
      }
    },
    close: () => abort.abort(),
  };
}

function parseFrame(block: string): SseFrame {
  const frame: { id?: string; event?: string; data?: string; comments: string[] } = { comments: [] };
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) {
      frame.comments.push(line.slice(1).trim());
      continue;
    }
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "id") frame.id = value;
    else if (field === "event") frame.event = value;
    else if (field === "data") frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
  }
  return frame;
}
