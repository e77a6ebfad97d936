// Sender rules through the real service: set per inbox and per organization on the JSON face and over Connect, and
// applied to mail that arrives by SMTP when it is stored. Blocked mail is stored but sends no webhook, wakes no wait
// and no stream, and lists leave it out unless asked; senders authenticate against a DNS server of the test's own.
import { describe, expect, test } from "vitest";
import { SenderRuleService } from "../../gen/mailbox/v1/sender_rule_service_pb.js";
import { Message, StoredEvent, Thread } from "../../src/db/entities/index.js";
import type { MessageRow } from "../../src/db/entities/message.js";
import { eventually, type Tenant } from "../support/harness.js";
import { webhookEndpoint } from "../support/inbound-ports.js";
import { authenticatedDomain, protectedDomain, sendMail } from "../support/sender-mail.js";
import { inboxOf, senderTrustApp } from "../support/sender-trust-app.js";
import { openSse } from "../support/sse-client.js";

const fixture = senderTrustApp();

async function putRules(tenant: Tenant, path: string, rules: object): Promise<any> {
  const res = await tenant.request("PUT", path, { body: rules });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** The inbox's stored messages by subject, once every subject is stored. */
async function storedBySubject(inboxId: string, subjects: readonly string[]): Promise<Record<string, MessageRow>> {
  return eventually(async () => {
    const rows = await fixture.app.db.fork().find(Message, { inboxId });
    const bySubject = Object.fromEntries(rows.map((m) => [m.subject, m]));
    return subjects.every((s) => bySubject[s]) ? bySubject : undefined;
  });
}

async function senderRuleOf(tenant: Tenant, message: { id: string; threadId: string }): Promise<string> {
  const res = await tenant.request("GET", `/v1/threads/${message.threadId}`);
  return res.body.messages.find((m: { id: string }) => m.id === message.id).inboundSecurity.senderRule;
}

describe("setting sender rules", () => {
  test("an inbox follows its own rules, else the organization's default, else none", async () => {
    const tenant = await fixture.app.createTenant();
    const [inbox, other] = [await inboxOf(tenant), await inboxOf(tenant)];
    const none = await tenant.request("GET", `/v1/inboxes/${inbox.id}/sender-rules`);
    expect(none.body).toEqual({ allow: [], block: [], requireAuthenticated: false, source: "none", updatedAt: null });

    const defaults = await putRules(tenant, "/v1/sender-rules", { block: ["Spam.Example", "spam.example", "x@Junk.example"] });
    expect(defaults).toMatchObject({ allow: [], block: ["spam.example", "x@junk.example"], requireAuthenticated: false, source: "organization" });
    const own = await putRules(tenant, `/v1/inboxes/${inbox.id}/sender-rules`, { allow: ["partner.example"], requireAuthenticated: true });
    expect(own).toMatchObject({ allow: ["partner.example"], block: [], requireAuthenticated: true, source: "inbox", updatedAt: expect.stringMatching(/Z$/) });

    expect((await tenant.request("GET", `/v1/inboxes/${inbox.id}/sender-rules`)).body).toEqual(own);
    expect((await tenant.request("GET", `/v1/inboxes/${other.id}/sender-rules`)).body).toEqual(defaults);
    const viaConnect = await tenant.connect(SenderRuleService).getOrganizationSenderRules({});
    expect(viaConnect.rules).toMatchObject({ block: ["spam.example", "x@junk.example"], source: "organization" });

    expect((await tenant.request("DELETE", `/v1/inboxes/${inbox.id}/sender-rules`)).status).toBe(204);
    expect((await tenant.request("GET", `/v1/inboxes/${inbox.id}/sender-rules`)).body).toEqual(defaults);
    // Removing what is not there is not an error.
    expect((await tenant.request("DELETE", `/v1/inboxes/${inbox.id}/sender-rules`)).status).toBe(204);
    // Another organization's default is not this one's.
    const stranger = await fixture.app.createTenant();
    expect((await stranger.request("GET", "/v1/sender-rules")).body.source).toBe("none");
  });

  test("refuses entries that are no address or domain, and too many, with a 400 that says which", async () => {
    const tenant = await fixture.app.createTenant();
    const inbox = await inboxOf(tenant);
    const res = await tenant.request("PUT", `/v1/inboxes/${inbox.id}/sender-rules`, { body: { allow: ["ok.example", "https://evil.example/"], block: [] } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "invalid_request", message: expect.stringContaining("rules.allow[1]: must be an address (name@example.com) or a domain") });
    const many = await tenant.request("PUT", "/v1/sender-rules", { body: { block: Array.from({ length: 1001 }, (_, i) => `d${i}.example`) } });
    expect(many.status).toBe(400);
    expect(many.body.message).toMatch(/rules\.block/);
  });

  test("needs mailbox:manage to set and mailbox:read to read; a key restricted to inboxes may not set the organization's default", async () => {
    const tenant = await fixture.app.createTenant();
    const inbox = await inboxOf(tenant);
    const reader = await tenant.issueKey({ scopes: ["mailbox:read"] });
    const asReader = { "x-api-key": reader.key };
    expect((await tenant.request("GET", `/v1/inboxes/${inbox.id}/sender-rules`, { headers: asReader })).status).toBe(200);
    const refused = await tenant.request("PUT", `/v1/inboxes/${inbox.id}/sender-rules`, { body: { block: ["x.example"] }, headers: asReader });
    expect(refused.status).toBe(403);
    const restricted = await tenant.issueKey({ scopes: ["*"], inboxIds: [inbox.id] });
    const org = await tenant.request("PUT", "/v1/sender-rules", { body: { block: ["x.example"] }, headers: { "x-api-key": restricted.key } });
    expect(org.status).toBe(403);
    expect(org.body.error).toBe("inbox_restricted");
    expect((await tenant.request("PUT", `/v1/inboxes/${inbox.id}/sender-rules`, { body: { block: ["x.example"] }, headers: { "x-api-key": restricted.key } })).status).toBe(200);
    expect((await tenant.request("GET", "/v1/sender-rules")).body.source).toBe("none");
  });
});

describe("applying sender rules to mail as it is stored", () => {
  test("blocked mail is stored, sends no webhook, wakes no wait or stream, and is listed only when asked", async () => {
    const tenant = await fixture.app.createTenant();
    const inbox = await inboxOf(tenant);
    const endpoint = fixture.receiver.endpoint();
    await webhookEndpoint(tenant, endpoint.url);
    await putRules(tenant, `/v1/inboxes/${inbox.id}/sender-rules`, { block: ["spam.example"] });
    const stream = await openSse(`${fixture.app.baseUrl}/v1/events:stream?inboxId=${inbox.id}`, { "x-api-key": tenant.key });
    const waiting = tenant.request("GET", `/v1/inboxes/${inbox.id}/messages:wait?timeoutSeconds=25`);

    await sendMail(fixture.smtp.port, { from: "Promo <deals@mail.spam.example>", to: inbox.address, subject: "Blocked" });
    const { Blocked: blocked } = await storedBySubject(inbox.id, ["Blocked"]);
    await sendMail(fixture.smtp.port, { from: "Friend <friend@example.org>", to: inbox.address, subject: "Welcome" });
    const { Welcome: welcome } = await storedBySubject(inbox.id, ["Welcome"]);

    // The wait and the stream answer the second message: the first, blocked, announced nothing.
    expect((await waiting).body.message.id).toBe(welcome!.id);
    const event = JSON.parse((await stream.nextEvent(20_000)).data!);
    stream.close();
    expect(event.data.messageId).toBe(welcome!.id);
    await endpoint.waitFor(1);
    expect(endpoint.requests.map((r) => JSON.parse(r.body).data.messageId)).toEqual([welcome!.id]);
    expect(await fixture.app.db.fork().count(StoredEvent, { inboxId: inbox.id })).toBe(1);

    expect(blocked!.senderBlocked).toBe(true);
    expect(await senderRuleOf(tenant, blocked!)).toBe("blocked");
    expect(await senderRuleOf(tenant, welcome!)).toBe("none");
    const threads = async (query = "") => (await tenant.request("GET", `/v1/inboxes/${inbox.id}/threads${query}`)).body.threads.map((t: { id: string }) => t.id);
    expect(await threads()).toEqual([welcome!.threadId]);
    expect(await threads("?includeBlocked=true")).toEqual([welcome!.threadId, blocked!.threadId]);
    const exported = async (query = "") => (await tenant.request("GET", `/v1/inboxes/${inbox.id}/export${query}`)).body.messages.map((m: { id: string }) => m.id);
    expect(await exported()).toEqual([welcome!.id]);
    expect(await exported("?includeBlocked=true")).toEqual([welcome!.id, blocked!.id]);
    // Waiting again after the allowed message: nothing, however long the blocked one has been there.
    expect((await tenant.request("GET", `/v1/inboxes/${inbox.id}/messages:wait?timeoutSeconds=1`)).body.message.id).toBe(welcome!.id);
  });

  test("an allow list takes only its senders; a block entry wins over an allow entry", async () => {
    const tenant = await fixture.app.createTenant();
    const inbox = await inboxOf(tenant);
    await putRules(tenant, `/v1/inboxes/${inbox.id}/sender-rules`, { allow: ["partner.example", "boss@corp.example"], block: ["intern@partner.example"] });
    const mail = [
      ["Ann <ann@eu.partner.example>", "subdomain of an allowed domain"],
      ["Boss <BOSS@corp.example>", "allowed address"],
      ["Other <other@corp.example>", "same domain, another address"],
      ["Intern <intern@partner.example>", "blocked inside an allowed domain"],
      ["Stranger <s@stranger.example>", "not on the list"],
    ] as const;
    for (const [from, subject] of mail) await sendMail(fixture.smtp.port, { from, to: inbox.address, subject });
    const stored = await storedBySubject(inbox.id, mail.map(([, s]) => s));
    const outcomes = await Promise.all(mail.map(async ([, subject]) => [subject, await senderRuleOf(tenant, stored[subject]!)]));
    expect(Object.fromEntries(outcomes)).toEqual({
      "subdomain of an allowed domain": "allowed",
      "allowed address": "allowed",
      "same domain, another address": "blocked",
      "blocked inside an allowed domain": "blocked",
      "not on the list": "blocked",
    });
  });

  test("requireAuthenticated takes an authenticated sender and blocks one that forged an allowed From", async () => {
    const tenant = await fixture.app.createTenant();
    const inbox = await inboxOf(tenant);
    const partner = authenticatedDomain(fixture.dns, "partner");
    await putRules(tenant, `/v1/inboxes/${inbox.id}/sender-rules`, { allow: [partner.domain], requireAuthenticated: true });
    await sendMail(fixture.smtp.port, { from: `Partner <team@${partner.domain}>`, to: inbox.address, subject: "Signed", sign: partner.sign });
    // Unsigned, from another envelope domain: nothing ties it to the partner (the partner's SPF names this client too).
    await sendMail(fixture.smtp.port, { from: `Partner <team@${partner.domain}>`, mailFrom: "bounce@forger.example", to: inbox.address, subject: "Forged" });
    const bank = protectedDomain(fixture.dns);
    await sendMail(fixture.smtp.port, { from: `Bank <alerts@${bank}>`, to: inbox.address, subject: "Unlisted" });
    const stored = await storedBySubject(inbox.id, ["Signed", "Forged", "Unlisted"]);
    expect(await senderRuleOf(tenant, stored.Signed!)).toBe("allowed");
    expect(await senderRuleOf(tenant, stored.Forged!)).toBe("blocked");
    expect(await senderRuleOf(tenant, stored.Unlisted!)).toBe("blocked");
    expect(stored.Signed!.senderAuthenticated).toBe(true);
    expect(stored.Forged!.senderAuthenticated).toBe(false);
  });

  test("the organization's default applies to inboxes without rules of their own; an inbox's own rules replace it", async () => {
    const tenant = await fixture.app.createTenant();
    const [plain, own] = [await inboxOf(tenant), await inboxOf(tenant)];
    await putRules(tenant, "/v1/sender-rules", { block: ["noisy.example"] });
    await putRules(tenant, `/v1/inboxes/${own.id}/sender-rules`, { block: [] });
    // Another organization's default does not reach this one's inboxes.
    const stranger = await fixture.app.createTenant();
    await putRules(stranger, "/v1/sender-rules", { requireAuthenticated: true });
    for (const inbox of [plain, own]) await sendMail(fixture.smtp.port, { from: `News <news@noisy.example>`, to: inbox.address, subject: "Noise" });
    const [{ Noise: inPlain }, { Noise: inOwn }] = [await storedBySubject(plain.id, ["Noise"]), await storedBySubject(own.id, ["Noise"])];
    expect(await senderRuleOf(tenant, inPlain!)).toBe("blocked");
    expect(await senderRuleOf(tenant, inOwn!)).toBe("none");
  });

  test("blocked mail never joins a listed thread, nor other mail a thread of blocked mail", async () => {
    const tenant = await fixture.app.createTenant();
    const inbox = await inboxOf(tenant);
    await sendMail(fixture.smtp.port, { from: "Carol <carol@example.org>", to: inbox.address, subject: "Plan", headers: ["Message-ID: <plan-1@thread.example>"] });
    const { Plan: plan } = await storedBySubject(inbox.id, ["Plan"]);
    const summaryBefore = await fixture.app.db.fork().findOneOrFail(Thread, plan!.threadId);
    await putRules(tenant, `/v1/inboxes/${inbox.id}/sender-rules`, { block: ["mallory@example.org"] });
    // A blocked reply into Carol's thread, then an allowed reply to the blocked one.
    await sendMail(fixture.smtp.port, {
      from: "Mallory <mallory@example.org>",
      to: inbox.address,
      subject: "Re: Plan (blocked)",
      headers: ["Message-ID: <plan-2@thread.example>", "In-Reply-To: <plan-1@thread.example>", "References: <plan-1@thread.example>"],
    });
    await sendMail(fixture.smtp.port, {
      from: "Dave <dave@example.org>",
      to: inbox.address,
      subject: "Re: Re: Plan",
      headers: ["Message-ID: <plan-3@thread.example>", "In-Reply-To: <plan-2@thread.example>", "References: <plan-1@thread.example> <plan-2@thread.example>"],
    });
    const stored = await storedBySubject(inbox.id, ["Re: Plan (blocked)", "Re: Re: Plan"]);
    const blockedReply = stored["Re: Plan (blocked)"]!;
    const allowedReply = stored["Re: Re: Plan"]!;
    expect(blockedReply.threadId).not.toBe(plan!.threadId);
    expect((await fixture.app.db.fork().findOneOrFail(Thread, blockedReply.threadId)).blocked).toBe(true);
    // Dave answered the blocked message but also names Carol's: his reply joins her thread, not the blocked one.
    expect(allowedReply.threadId).toBe(plan!.threadId);
    const summary = await fixture.app.db.fork().findOneOrFail(Thread, plan!.threadId);
    expect(summary.messageCount).toBe(summaryBefore.messageCount + 1);
    expect(summary.participants).not.toContain("mallory@example.org");
  });
});
