// Threading as a pure function: which earlier messages a message answers (the summary rule: thread-summary.test.ts).
import { describe, expect, test } from "vitest";
import { parentMessageIds } from "../../src/inbound/threading.js";

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
