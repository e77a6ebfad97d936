// Resource ids: a type prefix and 24 random lowercase hex characters (96 bits), as the spec's id shapes say.
import { randomBytes, randomUUID } from "node:crypto";

export type IdPrefix = "inb" | "thr" | "msg" | "whk" | "evt" | "upl";

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(12).toString("hex")}`;
}

export function newUuid(): string {
  return randomUUID();
}
