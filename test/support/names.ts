// Names no other test or run uses, in a module of their own: unit tests take them without importing the harness
// (and with it the whole service).
import { randomBytes } from "node:crypto";

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(5).toString("hex")}`;
}
