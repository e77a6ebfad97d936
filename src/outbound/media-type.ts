// Media types the service writes into headers (Content-Type of uploads and attachments): type/subtype only, so a
// value a caller gave can never carry a parameter or a header of its own.
import { InvalidRequest } from "../errors.js";

const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/;

/** A Content-Type's type/subtype, lower-cased, without parameters; application/octet-stream when empty. */
export function mediaTypeOf(contentType: string): string {
  const type = contentType.split(";", 1)[0]!.trim().toLowerCase();
  if (type === "") return "application/octet-stream";
  if (type.length > 255 || !MEDIA_TYPE.test(type)) throw new InvalidRequest(`content type ${JSON.stringify(contentType.slice(0, 100))} is not type/subtype`);
  return type;
}
