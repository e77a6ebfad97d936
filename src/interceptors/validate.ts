// Validates every request message against the buf.validate rules written in the contract.
import { createValidator } from "@bufbuild/protovalidate";
import type { Path } from "@bufbuild/protobuf/reflect";
import type { Interceptor } from "@connectrpc/connect";
import { InvalidRequest } from "../errors.js";

export function validateRequests(): Interceptor {
  const validator = createValidator();
  return (next) => async (req) => {
    if (!req.stream) {
      const result = validator.validate(req.method.input, req.message);
      if (result.kind === "invalid") {
        throw new InvalidRequest(
          result.violations.map((v) => `${jsonPath(v.field)}: ${v.message}`).join("; "),
        );
      }
      if (result.kind === "error") throw result.error;
    }
    return next(req);
  };
}

// Names the field as the JSON face spells it: to[1].email.
function jsonPath(path: Path): string {
  let out = "";
  for (const item of path) {
    if (item.kind === "field") out += (out === "" ? "" : ".") + item.jsonName;
    else if (item.kind === "list_sub") out += `[${item.index}]`;
    else if (item.kind === "map_sub") out += `[${String(item.key)}]`;
  }
  return out === "" ? "request" : out;
}
