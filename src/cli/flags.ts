// The flags of every `mailbox` command, as node:util's parseArgs reads them.
import type { parseArgs } from "node:util";

export const FLAGS = {
  role: { type: "string" },
  name: { type: "string" },
  id: { type: "string" },
  org: { type: "string" },
  status: { type: "string" },
  scopes: { type: "string" },
  "managed-limit": { type: "string" },
  "messages-per-minute": { type: "string" },
  "messages-per-day": { type: "string" },
  "recipients-per-day": { type: "string" },
  "inbox-ids": { type: "string" },
  "allowed-ips": { type: "string" },
  "send-mode": { type: "string" },
  "recipient-domains": { type: "string" },
  "expires-at": { type: "string" },
  "requests-per-minute": { type: "string" },
  "hold-for": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

export type Flags = ReturnType<typeof parseArgs<{ options: typeof FLAGS; allowPositionals: true }>>["values"];
