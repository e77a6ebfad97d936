// SMTP_PROXY_PROTOCOL: behind a TCP load balancer every connection starts with a PROXY protocol header, and the
// client address it names — not the balancer's — is the one the message records (inboundSecurity.smtp.remoteIp)
// and the one per-client limits count. A connection without the header is not served.
import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually, startTestApp, uniqueName, type TestApp } from "../support/harness.js";
import { RawSmtpClient, transaction } from "../support/smtp-client.js";

let app: TestApp;
let port: number;

beforeAll(async () => {
  app = await startTestApp({ SMTP_PROXY_PROTOCOL: "true", SMTP_MAX_CONNECTIONS_PER_CLIENT: "1" });
  port = (await app.startSmtp()).port;
});
afterAll(() => app?.stop());

const proxied = (client: string, clientPort: number) => `PROXY TCP4 ${client} 127.0.0.1 ${clientPort} 25\r\n`;

test("the client address of the PROXY header is the message's remoteIp", async () => {
  const tenant = await app.createTenant();
  const inbox = (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("proxy"), displayName: "Proxy" } })).body as { id: string; address: string };
  const { client, greeting } = await RawSmtpClient.connect(port, "127.0.0.1", undefined, proxied("203.0.113.7", 51000));
  expect(greeting?.code).toBe(220);
  await client.command("EHLO relay.example");
  const replies = await transaction(client, {
    from: "sender@example.org",
    to: [inbox.address],
    data: "From: sender@example.org\r\nSubject: through the balancer\r\nMessage-ID: <proxy-1@example.org>\r\n\r\nhello\r\n",
  });
  await client.quit();
  expect(replies.message?.code).toBe(250);

  const message = await eventually(async () => {
    const threads = await tenant.request("GET", `/v1/inboxes/${inbox.id}/threads`);
    const threadId = threads.body.threads?.[0]?.id as string | undefined;
    if (!threadId) return undefined;
    return (await tenant.request("GET", `/v1/threads/${threadId}`)).body.messages[0];
  }, 30_000);
  expect(message.inboundSecurity.smtp).toMatchObject({ remoteIp: "203.0.113.7", helo: "relay.example" });
});

test("per-client connection limits count the PROXY header's client, not the balancer's address", async () => {
  // One connection per client: a second from the same proxied client is refused, one from another is served.
  const first = await RawSmtpClient.connect(port, "127.0.0.1", undefined, proxied("198.51.100.20", 40001));
  expect(first.greeting?.code).toBe(220);
  const same = await RawSmtpClient.connect(port, "127.0.0.1", undefined, proxied("198.51.100.20", 40002));
  expect(same.greeting?.code).toBe(421);
  const other = await RawSmtpClient.connect(port, "127.0.0.1", undefined, proxied("198.51.100.21", 40003));
  expect(other.greeting?.code).toBe(220);
  await Promise.all([first.client.quit(), other.client.quit()]);
});

test("a connection that does not start with a PROXY header is closed without a greeting", async () => {
  const { client, greeting } = await RawSmtpClient.connect(port, "127.0.0.1", undefined, "EHLO direct.example\r\n");
  expect(greeting).toBeNull();
  await client.closed;
});
