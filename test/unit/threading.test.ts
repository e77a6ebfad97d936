// Threading as pure functions: which earlier messages a message answers, and a thread's summary after it joins.
import { describe, expect, test } from "vitest";
import { mergeParticipants, parentMessageIds, summaryWith, type ThreadSummary } from "../../src/inbound/threading.js";

describe("parentMessageIds", () => {
  test.each([
    ["a first message names nothing", { inReplyTo: null, references: [] }, []],
    ["In-Reply-To alone (some mobile clients send no References)", { inReplyTo: "<p@x>", references: [] }, ["<p@x>"]],
    // Thunderbird: References lists the whole ancestry oldest first; the direct parent is also In-Reply-To.
    ["In-Reply-To first, then References newest first", { inReplyTo: "<c@x>", references: ["<a@x>", "<b@x>", "<c@x>"] }, ["<c@x>", "<b@x>", "<a@x>"]],
    // Some list software rewrites In-Reply-To away and keeps References.
    ["References alone, newest first", { inReplyTo: null, references: ["<a@x>", "<b@x>"] }, ["<b@x>", "<a@x>"]],
    ["an id repeated in References counts once", { inReplyTo: "<a@x>", references: ["<a@x>", "<b@x>", "<a@x>"] }, ["<a@x>", "<b@x>"]],
  ])("%s", (_name, headers, expected) => {
    expect(parentMessageIds(headers)).toEqual(expected);
  });
});

describe("mergeParticipants", () => {
  test.each([
    ["lower-cases and keeps the order of first appearance", [], ["Alice@Example.org", "bob@example.org"], ["alice@example.org", "bob@example.org"]],
    ["adds only addresses not yet in the thread", ["alice@example.org"], ["ALICE@example.org", "carol@example.org"], ["alice@example.org", "carol@example.org"]],
    ["ignores blank addresses", ["a@x"], ["", "  "], ["a@x"]],
  ])("%s", (_name, existing, added, expected) => {
    expect(mergeParticipants(existing, added)).toEqual(expected);
  });
});

describe("summaryWith", () => {
  const t0 = new Date("2026-11-01T10:00:00.000Z");
  const t1 = new Date("2026-11-01T11:00:00.000Z");
  const thread: ThreadSummary = { subject: "Plan", participants: ["carol@example.org"], messageCount: 1, lastMessageAt: t1 };

  test("a first message starts a thread with its subject, its addresses and a count of one", () => {
    expect(summaryWith(null, { subject: "Plan", addresses: ["Carol@example.org", "agent@agents.test"], at: t0 })).toEqual({
      subject: "Plan",
      participants: ["carol@example.org", "agent@agents.test"],
      messageCount: 1,
      lastMessageAt: t0,
    });
  });

  test("a reply keeps the thread's subject, adds its addresses, counts itself and moves lastMessageAt", () => {
    const later = new Date("2026-11-01T12:00:00.000Z");
    expect(summaryWith(thread, { subject: "Re: Plan", addresses: ["dave@example.org"], at: later })).toEqual({
      subject: "Plan",
      participants: ["carol@example.org", "dave@example.org"],
      messageCount: 2,
      lastMessageAt: later,
    });
  });

  test("a message stamped earlier than the thread's last one never moves lastMessageAt back", () => {
    expect(summaryWith(thread, { subject: "Re: Plan", addresses: [], at: t0 }).lastMessageAt).toEqual(t1);
  });
});
