// A small structured logger: one JSON line per event on stderr. Secrets are never passed to it; the redaction
// below is a second line of defence for keys that end up inside an error message.
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 } as const;
// API keys and webhook signing secrets (an ORM error can carry SQL parameters).
const SECRET_PATTERN = /mbx_[a-f0-9]{16}_[A-Za-z0-9_-]{43}|whsec_[A-Za-z0-9+/=]+/g;

export function createLogger(level: keyof typeof LEVELS, write: (line: string) => void = (l) => process.stderr.write(l + "\n")): Logger {
  const emit = (l: keyof typeof LEVELS) => (msg: string, fields: Record<string, unknown> = {}) => {
    if (LEVELS[l] < LEVELS[level]) return;
    const line = JSON.stringify({ time: new Date().toISOString(), level: l, msg, ...fields }, (_k, v: unknown) =>
      v instanceof Error ? { name: v.name, message: v.message, stack: v.stack } : v,
    );
    write(line.replace(SECRET_PATTERN, "[redacted]"));
  };
  return { debug: emit("debug"), info: emit("info"), warn: emit("warn"), error: emit("error") };
}
