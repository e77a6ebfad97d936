import { defineEntity, p } from "@mikro-orm/core";
import { Upload } from "./upload.js";

/**
 * A piece of an upload's bytes, in order (as inbound_raw_chunks holds a large raw message): an upload is read a few
 * chunks per statement, so no statement's answer holds the whole file as hex text (src/db/tables/uploads.ts).
 */
export const UploadChunk = defineEntity({
  name: "UploadChunk",
  tableName: "upload_chunks",
  properties: {
    upload: () => p.manyToOne(Upload).primary().deleteRule("cascade"),
    seq: p.integer().primary(),
    data: p.blob(),
  },
});
