// The one rule a thread's summary follows, whichever path adds the message: inbound processing (a batch at a time)
// and outbound acceptance (a send starts a thread, a reply joins one) both fold summaryWith over the messages.
// Before issue 20 they had a rule each: inbound read the parsed From, To and Cc headers, so mail without a From
// header added no sender though it is stored (and shown) with its envelope sender; outbound counted and merged in an
// UPDATE of its own.
import { describe, expect, test } from "vitest";
import { summaryWith, type JoiningMessage, type ThreadSummary } from "../../src/db/tables/threads.js";

const t0 = new Date("2026-11-01T10:00:00.000Z");
const t1 = new Date("2026-11-01T11:00:00.000Z");
const t2 = new Date("2026-11-01T12:00:00.000Z");
const inbox = "agent@agents.test";
const a = (email: string) => ({ email });

const plan: ThreadSummary = { subject: "Plan", participants: ["carol@example.org", inbox], messageCount: 2, lastMessageAt: t1 };

interface Case {
  readonly name: string;
  readonly thread: ThreadSummary | null;
  readonly message: JoiningMessage;
  readonly expected: ThreadSummary;
}

const cases: Case[] = [
  {
    // Thunderbird: From "Carol <Carol@Example.org>", To the inbox, Cc "Erin <ERIN@Example.org>".
    name: "an inbound first message starts a thread with its subject, its From, To and Cc lower-cased in that order, and a count of one",
    thread: null,
    message: { subject: "Plan", from: a("Carol@Example.org"), to: [a(inbox)], cc: [a("ERIN@Example.org")], at: t0 },
    expected: { subject: "Plan", participants: ["carol@example.org", inbox, "erin@example.org"], messageCount: 1, lastMessageAt: t0 },
  },
  {
    // The inbound store gives a message without a From header the envelope sender, and the thread counts it too.
    name: "inbound mail without a From header counts the envelope sender it is stored with",
    thread: null,
    message: { subject: "", from: a("MAILER@example.net"), to: [a(inbox)], cc: [], at: t0 },
    expected: { subject: "", participants: ["mailer@example.net", inbox], messageCount: 1, lastMessageAt: t0 },
  },
  {
    name: "the null sender of a bounce (an empty envelope sender) adds nobody",
    thread: null,
    message: { subject: "Undeliverable", from: a(""), to: [a(inbox)], cc: [], at: t0 },
    expected: { subject: "Undeliverable", participants: [inbox], messageCount: 1, lastMessageAt: t0 },
  },
  {
    name: "an outbound send starts a thread with the inbox and its recipients",
    thread: null,
    message: { subject: "Hello", from: a(inbox), to: [a("alice@example.com"), a("bob@example.com")], cc: [], at: t0 },
    expected: { subject: "Hello", participants: [inbox, "alice@example.com", "bob@example.com"], messageCount: 1, lastMessageAt: t0 },
  },
  {
    name: "an inbound reply keeps the thread's subject, adds only new addresses, counts itself and moves lastMessageAt",
    thread: plan,
    message: { subject: "Re: Plan", from: a("dave@example.org"), to: [a(inbox)], cc: [a("Carol@example.org")], at: t2 },
    expected: { subject: "Plan", participants: ["carol@example.org", inbox, "dave@example.org"], messageCount: 3, lastMessageAt: t2 },
  },
  {
    name: "an outbound reply joins by the same rule",
    thread: plan,
    message: { subject: "Re: Plan", from: a(inbox), to: [a("carol@example.org"), a("frank@example.org")], cc: [], at: t2 },
    expected: { subject: "Plan", participants: ["carol@example.org", inbox, "frank@example.org"], messageCount: 3, lastMessageAt: t2 },
  },
  {
    // Times of two processes' messages can interleave: the thread's last activity stays the latest.
    name: "a message stamped earlier than the thread's last one never moves lastMessageAt back",
    thread: plan,
    message: { subject: "Re: Plan", from: a("carol@example.org"), to: [a(inbox)], cc: [], at: t0 },
    expected: { ...plan, messageCount: 3, lastMessageAt: t1 },
  },
  {
    name: "addresses are trimmed, and blank ones ignored",
    thread: null,
    message: { subject: "Hi", from: a("  Gina@Example.org "), to: [a(" "), a(inbox)], cc: [a("")], at: t0 },
    expected: { subject: "Hi", participants: ["gina@example.org", inbox], messageCount: 1, lastMessageAt: t0 },
  },
];

describe("summaryWith", () => {
  test.each(cases)("$name", ({ thread, message, expected }) => {
    expect(summaryWith(thread, message)).toEqual(expected);
  });

  test("folding inbound and outbound messages in any mix gives what each added, in order of first appearance", () => {
    const messages: JoiningMessage[] = [
      { subject: "Plan", from: a(inbox), to: [a("carol@example.org")], cc: [], at: t0 },
      { subject: "Re: Plan", from: a("Carol@example.org"), to: [a(inbox)], cc: [a("erin@example.org")], at: t2 },
      { subject: "Re: Plan", from: a(inbox), to: [a("carol@example.org"), a("erin@example.org")], cc: [], at: t1 },
    ];
    const summary = messages.reduce<ThreadSummary | null>((thread, m) => summaryWith(thread, m), null);
    expect(summary).toEqual({ subject: "Plan", participants: [inbox, "carol@example.org", "erin@example.org"], messageCount: 3, lastMessageAt: t2 });
  });
});
