// The contract's comments at run time (gen/mailbox/v1/docs.ts, written by scripts/protoc-gen-docs.ts): the API's
// documentation, for the OpenAPI document and the MCP tools.
import type { DescField, DescMessage, DescMethod } from "@bufbuild/protobuf";
import { docs } from "../../gen/mailbox/v1/docs.js";

/** The leading comment of an RPC, message or field in the contract; "" when it has none. */
export function docOf(desc: DescMethod | DescMessage | DescField): string {
  const name = desc.kind === "rpc" ? `${desc.parent.typeName}.${desc.name}` : desc.kind === "field" ? `${desc.parent.typeName}.${desc.name}` : desc.typeName;
  return docs[name] ?? "";
}
