import { describe, expect, test } from "vitest";
import { bodyLimitOf } from "../../src/http/request-body.js";
import { CONTRACT_SERVICES } from "../../src/rpc/services.js";

const limits = { maxRequestBytes: 1024 * 1024, messageContentBytes: 10 * 1024 * 1024 };
const methods = CONTRACT_SERVICES.flatMap((s) => s.methods);

describe("request body limits read from the contract", () => {
  test("send, reply, /v1/send, forward and uploads may carry twice the message content limit", () => {
    const large = methods.filter((m) => bodyLimitOf(m, limits) > limits.maxRequestBytes).map((m) => `${m.parent.name}.${m.name}`);
    expect(large.sort()).toEqual([
      "DeliveryService.SendEmail",
      "MessageService.ForwardMessage",
      "MessageService.SendMessage",
      "ThreadService.ReplyToThread",
      "UploadService.CreateUpload",
    ]);
    for (const m of methods.filter((m) => bodyLimitOf(m, limits) > limits.maxRequestBytes)) {
      expect(bodyLimitOf(m, limits)).toBe(2 * limits.messageContentBytes);
    }
  });

  test("every other operation takes API_MAX_REQUEST_BYTES, and a send never less", () => {
    const small = methods.filter((m) => bodyLimitOf(m, limits) === limits.maxRequestBytes);
    expect(small.length).toBe(methods.length - 5);
    const send = methods.find((m) => m.name === "SendEmail")!;
    expect(bodyLimitOf(send, { maxRequestBytes: 1024 * 1024, messageContentBytes: 4096 })).toBe(1024 * 1024);
  });
});
