import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  CreateUploadResponseSchema,
  DeleteUploadResponseSchema,
  GetUploadResponseSchema,
  UploadSchema,
  type Upload,
  type UploadService,
} from "../../gen/mailbox/v1/upload_service_pb.js";
import { InvalidRequest } from "../errors.js";
import { createUpload, deleteUpload, getUpload, type UploadDeps, type UploadRecord } from "../uploads/uploads.js";
import { callerOf } from "./call-context.js";

export function createUploadService(deps: { uploads: UploadDeps }): Partial<ServiceImpl<typeof UploadService>> {
  const { uploads } = deps;
  return {
    async createUpload(req, ctx) {
      const { principal, store } = callerOf(ctx);
      const content = req.content!;
      if (content.extensions.length > 0) throw new InvalidRequest("content.extensions must be empty");
      const upload = await createUpload(
        store,
        principal,
        { filename: req.filename, contentType: content.contentType, content: content.data, source: { kind: "upload" } },
        uploads,
      );
      return create(CreateUploadResponseSchema, { upload: toUpload(upload) });
    },
    async getUpload(req, ctx) {
      const { principal, store } = callerOf(ctx);
      return create(GetUploadResponseSchema, { upload: toUpload(await getUpload(store, principal, req.uploadId, uploads)) });
    },
    async deleteUpload(req, ctx) {
      const { principal, store } = callerOf(ctx);
      await deleteUpload(store, principal, req.uploadId, uploads);
      return create(DeleteUploadResponseSchema);
    },
  };
}

// Kept here: it has no other user.
function toUpload(u: UploadRecord): Upload {
  return create(UploadSchema, {
    id: u.id,
    filename: u.filename,
    contentType: u.contentType,
    size: BigInt(u.size),
    sha256: u.sha256,
    createdAt: timestampFromDate(u.createdAt),
    expiresAt: timestampFromDate(u.expiresAt),
  });
}
