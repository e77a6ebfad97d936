// SMTP_PROXY_PROTOCOL with SMTP_PROXY_TRUSTED: behind a TCP load balancer its connections start with a PROXY
// protocol header (text, v1, or binary, v2, as AWS's load balancers send it), and the client address it names — not the balancer's — is the one the message records
// (inboundSecurity.smtp.remoteIp) and the one per-client limits count (an IPv6 /64 as one client). The header is
// read only from the trusted addresses and ranges: anyone else who reaches the port is served as the address it
// connects from, and a header it sends is refused. Clients bind to their own 127.x addresses to be those peers.
import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually, startTestApp, uniqueName, type Tenant, type TestApp } from "../support/harness.js";
import { RawSmtpClient, transaction } from "../support/smtp-client.js";

let app: TestApp;
let port: number;
let tenant: Tenant;

/** The load balancer: one address, and a range of them. */
const BALANCER = "127.0.0.1";
const BALANCER_RANGE = "127.0.6.0/24";
/** A peer that reaches the port directly. */
const DIRECT = "127.0.7.9";

beforeAll(async () => {
  app = await startTestApp({ SMTP_PROXY_PROTOCOL: "true", SMTP_PROXY_TRUSTED: `${BALANCER}, ${BALANCER_RANGE}`, SMTP_MAX_CONNECTIONS_PER_CLIENT: "1" });
  port = (await app.startSmtp()).port;
  tenant = await app.createTenant();
});
afterAll(() => app?.stop());

const proxied = (client: string, clientPort: number) => `PROXY ${client.includes(":") ? "TCP6" : "TCP4"} ${client} ${client.includes(":") ? "::1" : "127.0.0.1"} ${clientPort} 25\r\n`;

/** A binary (v2) PROXY header: PROXY over TCP from `client`, or LOCAL (a load balancer's health check) without one. */
function binaryHeader(client: string | "local", clientPort = 40000): Buffer {
  const signature = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
  if (client === "local") return Buffer.concat([signature, Buffer.from([0x20, 0x00, 0x00, 0x00])]);
  const v6 = client.includes(":");
  const address = (ip: string) => {
    if (!v6) return Buffer.from(ip.split(".").map(Number));
    const bytes = Buffer.alloc(16);
    expandV6(ip).forEach((group, i) => bytes.writeUInt16BE(group, i * 2));
    return bytes;
  };
  const ports = Buffer.alloc(4);
  ports.writeUInt16BE(clientPort, 0);
  ports.writeUInt16BE(25, 2);
  // A TLV as AWS adds one (type 0xEA, its VPC endpoint id), which the reader skips.
  const tlv = Buffer.concat([Buffer.from([0xea, 0x00, 0x05]), Buffer.from("vpce1")]);
  const body = Buffer.concat([address(client), address(v6 ? "::1" : "127.0.0.1"), ports, tlv]);
  const length = Buffer.alloc(2);
  length.writeUInt16BE(body.length);
  return Buffer.concat([signature, Buffer.from([0x21, v6 ? 0x21 : 0x11]), length, body]);
}

function expandV6(ip: string): number[] {
  const [head = "", tail = ""] = ip.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  return [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right].map((g) => parseInt(g, 16));
}

/** Sends one message on a connection whose greeting came, and answers the remoteIp it is stored with. */
async function storedRemoteIp(client: RawSmtpClient): Promise<string> {
  const inbox = (await tenant.request("POST", "/v1/inboxes", { body: { localPart: uniqueName("proxy"), displayName: "Proxy" } })).body as { id: string; address: string };
  await client.command("EHLO relay.example");
  const replies = await transaction(client, {
    from: "sender@example.org",
    to: [inbox.address],
    data: `From: sender@example.org\r\nSubject: through the balancer\r\nMessage-ID: <${uniqueName("proxy")}@example.org>\r\n\r\nhello\r\n`,
  });
  await client.quit();
  expect(replies.message?.code).toBe(250);
  const message = await eventually(async () => {
    const threads = await tenant.request("GET", `/v1/inboxes/${inbox.id}/threads`);
    const threadId = threads.body.threads?.[0]?.id as string | undefined;
    if (!threadId) return undefined;
    return (await tenant.request("GET", `/v1/threads/${threadId}`)).body.messages[0];
  }, 30_000);
  expect(message.inboundSecurity.smtp).toMatchObject({ helo: "relay.example" });
  return message.inboundSecurity.smtp.remoteIp as string;
}

test("the client address of a trusted balancer's PROXY header is the message's remoteIp, from an address or a range", async () => {
  const fromAddress = await RawSmtpClient.connect(port, "127.0.0.1", BALANCER, proxied("203.0.113.7", 51000));
  expect(fromAddress.greeting?.code).toBe(220);
  expect(await storedRemoteIp(fromAddress.client)).toBe("203.0.113.7");
  const fromRange = await RawSmtpClient.connect(port, "127.0.0.1", "127.0.6.200", proxied("2001:db8:7::1", 51001));
  expect(fromRange.greeting?.code).toBe(220);
  expect(await storedRemoteIp(fromRange.client)).toBe("2001:db8:7::1");
});

test("a binary (v2) header of a trusted balancer names the client, over IPv4 or IPv6; a LOCAL one (its health check) the balancer itself", async () => {
  for (const [client, stored] of [
    ["198.51.100.42", "198.51.100.42"],
    ["2001:db8:7::2", "2001:db8:7::2"],
  ] as const) {
    const { client: c, greeting } = await RawSmtpClient.connect(port, "127.0.0.1", BALANCER, binaryHeader(client));
    expect(greeting?.code, client).toBe(220);
    expect(await storedRemoteIp(c)).toBe(stored);
  }
  const local = await RawSmtpClient.connect(port, "127.0.0.1", BALANCER, binaryHeader("local"));
  expect(local.greeting?.code).toBe(220);
  expect(await storedRemoteIp(local.client)).toBe(BALANCER);
  // A header that starts like one and is not: the connection is closed unanswered.
  const bad = Buffer.concat([binaryHeader("198.51.100.42").subarray(0, 11), Buffer.from("X\x21\x11\x00\x0c")]);
  const broken = await RawSmtpClient.connect(port, "127.0.0.1", BALANCER, bad);
  expect(broken.greeting).toBeNull();
});

test("a PROXY header from anyone else is refused, and their mail records the address they connect from", async () => {
  // Sent at once, as a load balancer sends it: the connection is refused before its greeting.
  const forged = await RawSmtpClient.connect(port, "127.0.0.1", DIRECT, proxied("198.51.100.99", 40000));
  expect(forged.greeting?.code).toBe(421);
  await forged.client.closed;
  // Sent after the greeting it is no command, and changes nothing.
  const { client, greeting } = await RawSmtpClient.connect(port, "127.0.0.1", DIRECT);
  expect(greeting?.code).toBe(220);
  expect((await client.command(proxied("198.51.100.99", 40001).trimEnd()))?.code).toBe(500);
  expect(await storedRemoteIp(client)).toBe(DIRECT);
});

test("per-client connection limits count the PROXY header's client, an IPv6 /64 as one", async () => {
  // One connection per client: a second from the same proxied client (or its /64) is refused, one from another is served.
  const open: RawSmtpClient[] = [];
  const connect = async (client: string, clientPort: number) => {
    const { client: c, greeting } = await RawSmtpClient.connect(port, "127.0.0.1", BALANCER, proxied(client, clientPort));
    if (greeting?.code === 220) open.push(c);
    return greeting?.code;
  };
  try {
    expect(await connect("198.51.100.20", 40001)).toBe(220);
    expect(await connect("198.51.100.20", 40002)).toBe(421);
    expect(await connect("198.51.100.21", 40003)).toBe(220);
    expect(await connect("2001:db8:1:2::10", 40004)).toBe(220);
    expect(await connect("2001:db8:1:2:ffff::11", 40005)).toBe(421);
    expect(await connect("2001:db8:1:3::10", 40006)).toBe(220);
  } finally {
    await Promise.all(open.map((c) => c.quit()));
  }
});

test("a trusted balancer's connection that does not start with a PROXY header is closed without a greeting", async () => {
  const { client, greeting } = await RawSmtpClient.connect(port, "127.0.0.1", BALANCER, "EHLO direct.example\r\n");
  expect(greeting).toBeNull();
  await client.closed;
});
