// Opaque pagination cursors: the keyset position (createdAt, id) of the last item, bound to the tenant and the
// resource listed, signed with HMAC-SHA256. A tampered cursor, or one used for another tenant or list, is a 400.
import { createHmac, timingSafeEqual } from "node:crypto";
import { InvalidRequest } from "../errors.js";

export interface KeysetPosition {
  readonly createdAt: Date;
  readonly id: string;
}

export interface CursorCodec {
  encode(scope: CursorScope, position: KeysetPosition): string;
  decode(scope: CursorScope, cursor: string): KeysetPosition;
}

/** What a cursor is bound to: the organization and the list (e.g. "inboxes", "threads:inb_…"). */
export interface CursorScope {
  readonly organizationId: string;
  readonly resource: string;
}

export const DEFAULT_PAGE_SIZE = 20;

export function createCursorCodec(secret: string): CursorCodec {
  const sign = (scope: CursorScope, payload: string) =>
    createHmac("sha256", secret)
      .update(`${scope.organizationId}\n${scope.resource}\n${payload}`)
      .digest()
      .subarray(0, 16);
  return {
    encode(scope, { createdAt, id }) {
      const payload = Buffer.from(JSON.stringify([createdAt.getTime(), id])).toString("base64url");
      return `${payload}.${sign(scope, payload).toString("base64url")}`;
    },
    decode(scope, cursor) {
      const [payload, mac, extra] = cursor.split(".");
      const invalid = () => new InvalidRequest("the cursor is not valid for this list", "invalid_cursor");
      if (payload === undefined || mac === undefined || extra !== undefined) throw invalid();
      const given = Buffer.from(mac, "base64url");
      const expected = sign(scope, payload);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid();
      const [ms, id] = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as [number, string];
      return { createdAt: new Date(ms), id };
    },
  };
}

/** The where-clause of the page after a position, for a newest-first (createdAt desc, id desc) keyset. */
export function afterPosition(position: KeysetPosition | undefined): object {
  if (!position) return {};
  return {
    $or: [{ createdAt: { $lt: position.createdAt } }, { createdAt: position.createdAt, id: { $lt: position.id } }],
  };
}
