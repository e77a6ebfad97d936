// The pure parts of delivery: the submission's aggregate status (spec States rules 1-2), the mailbox message's
// mirror of it, the retry schedule, and how a classifier verdict becomes a recipient state.
import { describe, expect, test } from "vitest";
import { deliveryRetryDelayMs } from "../../workflows/delivery.js";
import { aggregateStatus, messageDeliveryStatus, queueIdOf } from "../../src/outbound/delivery/aggregate.js";
import { outcomeOf } from "../../src/outbound/delivery/deliverer.js";
import { addressKey } from "../../src/outbound/delivery/smtp-attempt.js";
import { classifySmtpReply, classifyTransportFailure } from "../../src/outbound/classify-smtp-result.js";

describe("aggregateStatus", () => {
  test.each([
    [["pending"], "pending"],
    [["pending", "pending"], "pending"],
    [["queued", "pending"], "queued"],
    [["queued", "queued"], "queued"],
    [["queued", "deferred"], "deferred"],
    [["deferred", "failed"], "deferred"],
    [["delivered"], "delivered"],
    [["delivered", "delivered"], "delivered"],
    [["delivered", "queued"], "partially_delivered"],
    [["delivered", "deferred"], "partially_delivered"],
    [["delivered", "pending"], "partially_delivered"],
    [["delivered", "bounced"], "partially_delivered"],
    [["failed", "delivered", "failed"], "partially_delivered"],
    [["bounced"], "failed"],
    [["bounced", "failed"], "failed"],
    [["failed", "queued"], "queued"],
    [["failed", "pending"], "pending"],
    [[], "pending"],
  ])("%j → %s", (statuses, expected) => {
    expect(aggregateStatus(statuses)).toBe(expected);
  });
});

test("the mailbox message shows submitted while the submission is pending, then the aggregate", () => {
  expect(messageDeliveryStatus("pending")).toBe("submitted");
  for (const s of ["queued", "deferred", "delivered", "partially_delivered", "failed"] as const) expect(messageDeliveryStatus(s)).toBe(s);
});

test("the retry delay doubles from the initial wait up to the maximum", () => {
  const schedule = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => deliveryRetryDelayMs(n, 60_000, 3_600_000));
  expect(schedule).toEqual([60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, 3_600_000, 3_600_000]);
  expect(deliveryRetryDelayMs(10_000, 200, 400)).toBe(400);
  expect(deliveryRetryDelayMs(0, 200, 400)).toBe(200);
});

test("the queue id is the submission id's hex digits, upper-case", () => {
  expect(queueIdOf("0b5e7c1a-9d3f-4e2a-8c6b-1f0a2b3c4d5e")).toBe("0B5E7C1A9D3F4E2A8C6B1F0A2B3C4D5E");
});

describe("outcomeOf", () => {
  test("a 250 delivers and keeps the response text", () => {
    expect(outcomeOf(classifySmtpReply(250, "250 2.0.0 Ok: queued as 4Bdc1Z"), true)).toEqual({
      status: "delivered",
      response: "250 2.0.0 Ok: queued as 4Bdc1Z",
      failureCode: null,
    });
  });
  test("a 451 defers", () => {
    expect(outcomeOf(classifySmtpReply(451, "451 4.2.0 Mailbox busy"), true)).toMatchObject({ status: "deferred", failureCode: "smtp_4.2.0" });
  });
  test("a 550 5.1.1 from a server bounces (a suppression follows)", () => {
    expect(outcomeOf(classifySmtpReply(550, "550 5.1.1 User unknown"), true)).toMatchObject({ status: "bounced", failureCode: "smtp_5.1.1" });
  });
  test("a policy 5xx fails without bouncing", () => {
    expect(outcomeOf(classifySmtpReply(550, "550 5.7.1 Refused by policy"), true)).toMatchObject({ status: "failed", failureCode: "smtp_5.7.1" });
  });
  test("a null MX or a missing domain fails without suppressing the address", () => {
    expect(outcomeOf(classifyTransportFailure({ code: "ENULLMX", message: "null MX" }), false)).toMatchObject({ status: "failed", failureCode: "null_mx" });
    expect(outcomeOf(classifyTransportFailure({ code: "ENODOMAIN", message: "NXDOMAIN" }), false)).toMatchObject({ status: "failed", failureCode: "no_such_domain" });
  });
  test("a refused connection defers", () => {
    expect(outcomeOf(classifyTransportFailure({ code: "ECONNREFUSED", message: "connect ECONNREFUSED" }), true)).toMatchObject({
      status: "deferred",
      failureCode: "transport_econnrefused",
    });
  });
});

test("addresses compare as servers echo them: local part case-insensitive, domain in ASCII", () => {
  expect(addressKey("Alice@Example.ORG")).toBe("alice@example.org");
  expect(addressKey("bob@bücher.example")).toBe("bob@xn--bcher-kva.example");
});
