import { describe, expect, test } from "vitest";
import { classifySmtpReply, classifyTransportFailure } from "../../src/outbound/classify-smtp-result.js";

describe("classifying SMTP replies", () => {
  test.each([
    // Postfix: "250 2.0.0 Ok: queued as 4C9F01E0F"
    [250, "250 2.0.0 Ok: queued as 4C9F01E0F", "delivered", undefined, undefined],
    // Gmail greylisting: "451-4.7.1 ... Please try again later"
    [451, "451-4.7.1 Please try again later", "deferred", "smtp_4.7.1", undefined],
    // Mailbox full (Exchange): "452 4.2.2 The email account that you tried to reach is over quota"
    [452, "452 4.2.2 The email account that you tried to reach is over quota", "deferred", "smtp_4.2.2", undefined],
    // Gmail: "550-5.1.1 The email account that you tried to reach does not exist."
    [550, "550-5.1.1 The email account that you tried to reach does not exist.", "rejected", "smtp_5.1.1", true],
    // Outlook: "550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup"
    [550, "550 5.1.10 RESOLVER.ADR.RecipientNotFound", "rejected", "smtp_5.1.10", true],
    // Policy refusal is not the address's fault: "550 5.7.1 Message rejected due to content restrictions"
    [550, "550 5.7.1 Message rejected due to content restrictions", "rejected", "smtp_5.7.1", false],
    // Size: "552 5.3.4 Message size exceeds fixed maximum message size"
    [552, "552 5.3.4 Message size exceeds fixed maximum message size", "rejected", "smtp_5.3.4", false],
    // A 5xx reply carrying a 4.x.x enhanced code is temporary (RFC 3463: the enhanced class governs)
    [550, "550 4.7.0 Temporary local problem", "deferred", "smtp_4.7.0", undefined],
    // No enhanced code, classic wording of a missing user
    [550, "550 User unknown", "rejected", "smtp_550", true],
    [554, "554 Transaction failed", "rejected", "smtp_554", false],
  ])("%i %s → %s", (code, response, kind, failureCode, hardBounce) => {
    const verdict = classifySmtpReply(code, response);
    expect(verdict.kind).toBe(kind);
    if (verdict.kind !== "delivered") expect(verdict.failureCode).toBe(failureCode);
    if (verdict.kind === "rejected") expect(verdict.hardBounce).toBe(hardBounce);
  });

  test("treats connection trouble as deferred and a null MX as a hard bounce", () => {
    expect(classifyTransportFailure({ code: "ECONNREFUSED", message: "connect ECONNREFUSED" })).toMatchObject({ kind: "deferred", failureCode: "transport_econnrefused" });
    expect(classifyTransportFailure({ code: "ETIMEDOUT", message: "timeout" }).kind).toBe("deferred");
    expect(classifyTransportFailure({ code: "ENULLMX", message: "null MX" })).toMatchObject({ kind: "rejected", hardBounce: true, failureCode: "null_mx" });
  });

  test("fails a domain whose only next hops are not public for good, without a hard bounce", () => {
    expect(classifyTransportFailure({ code: "ENOTPUBLIC", message: "no public address" })).toEqual({
      kind: "rejected",
      response: "no public address",
      failureCode: "next_hop_not_public",
      hardBounce: false,
    });
  });
});
