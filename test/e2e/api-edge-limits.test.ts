// The API's edge against hostile clients, on a real `mailbox serve --role api` process: bodies are refused over
// their operation's limit as they stream in and unauthenticated requests before their body is read, on all four
// faces, in each face's own protocol; memory stays flat under twenty 1 GiB bodies per face; slow and surplus
// connections are cut off, in all and per peer; an address that keeps failing authentication is refused before any
// key lookup.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, Code, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { AccountService } from "../../gen/mailbox/v1/account_service_pb.js";
import { MessageService } from "../../gen/mailbox/v1/message_service_pb.js";
import { issueKey } from "../../src/admin/api-keys.js";
import { createOrganization } from "../../src/admin/organizations.js";
import { loadConfig } from "../../src/config.js";
import { openDatabase, type Database } from "../../src/db/database.js";
import { CREATE_INBOX, exchange, FACES, SEND_EMAIL, type Answer, type Face } from "../support/edge-client.js";
import { uniqueName } from "../support/harness.js";

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

interface ApiProcess {
  readonly child: ChildProcess;
  readonly url: string;
}

/** A real `mailbox serve --role api` process on the run's PostgreSQL and Temporal. */
async function startApiProcess(env: Record<string, string>): Promise<ApiProcess> {
  const dataDir = await mkdtemp(join(tmpdir(), "mailbox-edge-"));
  dataDirs.push(dataDir);
  const child = spawn(process.execPath, ["src/cli/mailbox.js", "serve", "--role", "api"], {
    env: {
      ...process.env,
      DATABASE_URL: inject("databaseUrl"),
      TEMPORAL_ADDRESS: inject("temporalAddress"),
      TEMPORAL_TASK_QUEUE: uniqueName("edge"),
      HTTP_PORT: "0",
      DATA_DIR: dataDir,
      CURSOR_SECRET: randomBytes(32).toString("hex"),
      MANAGED_DOMAIN: "agents.test",
      LOG_LEVEL: "error",
      ...env,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  let out = "";
  child.stdout!.setEncoding("utf8");
  for await (const chunk of child.stdout!) {
    out += chunk;
    const line = out.split("\n").find((l) => l.startsWith("{"));
    if (line) return { child, url: (JSON.parse(line) as { api: string }).api };
  }
  throw new Error("the api process exited before listening");
}

const children: ChildProcess[] = [];
const dataDirs: string[] = [];
let db: Database;
/** The process most tests talk to: default limits, but few failed authentications per address. */
let api: ApiProcess;
let url: string;
const defaults = loadConfig({}).defaults;
const AUTH_FAILURES_PER_MINUTE = 20;

beforeAll(async () => {
  db = await openDatabase(inject("databaseUrl"), { poolMax: 2 });
  api = await startApiProcess({ API_AUTH_FAILURES_PER_MINUTE: String(AUTH_FAILURES_PER_MINUTE) });
  url = api.url;
});

afterAll(async () => {
  for (const child of children) {
    if (child.exitCode !== null) continue;
    child.kill("SIGTERM");
    await once(child, "exit");
  }
  await db?.close();
  for (const dir of dataDirs) await rm(dir, { recursive: true, force: true });
});

async function newKey(): Promise<string> {
  const org = await createOrganization(db.fork(), defaults, { name: uniqueName("edge") });
  const { secret } = await issueKey(db.fork(), defaults, org.id, { scopes: ["*"] });
  return secret;
}

async function rssMb(): Promise<number> {
  return Number(/VmRSS:\s+(\d+)/.exec(await readFile(`/proc/${api.child.pid}/status`, "utf8"))![1]) / 1024;
}

const REFUSALS = {
  tooLarge: { status: 413, code: Code.ResourceExhausted, errorCode: "payload_too_large" },
  unauthenticated: { status: 401, code: Code.Unauthenticated, errorCode: "unauthenticated" },
};

/** The refusal as each face's protocol carries it; the exchange ends with it. */
function expectRefused(face: Face, answer: Answer, refusal: (typeof REFUSALS)[keyof typeof REFUSALS]): void {
  const rpc = face !== "rest";
  const grpc = face === "grpc" || face === "grpc-web";
  expect({ status: answer.status, code: answer.code, errorCode: answer.errorCode, endedByServer: answer.endedByServer, failure: answer.failure }).toEqual({
    failure: undefined,
    status: grpc ? 200 : refusal.status,
    code: rpc ? refusal.code : undefined,
    errorCode: refusal.errorCode,
    endedByServer: true,
  });
}

function clients(key: string) {
  const auth: Interceptor = (next) => (req) => {
    req.header.set("x-api-key", key);
    return next(req);
  };
  const options = { baseUrl: url, interceptors: [auth] };
  return {
    connect: createClient(AccountService, createConnectTransport({ ...options, httpVersion: "1.1" })),
    grpc: createClient(AccountService, createGrpcTransport(options)),
    grpcWeb: createClient(AccountService, createGrpcWebTransport({ ...options, httpVersion: "1.1" })),
    messages: createClient(MessageService, createConnectTransport({ ...options, httpVersion: "1.1" })),
  };
}

describe("request bodies", () => {
  test("twenty parallel 1 GiB bodies without a key on each face are refused as they stream in, keyed calls keep working, and the process grows by less than 100 MB", async () => {
    const key = await newKey();
    const rpc = clients(key);
    const legit: Record<string, () => Promise<unknown>> = {
      connect: () => rpc.connect.getMe({}),
      grpc: () => rpc.grpc.getMe({}),
      grpcWeb: () => rpc.grpcWeb.getMe({}),
      rest: async () => {
        const res = await fetch(`${url}/v1/me`, { headers: { "x-api-key": key } });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      },
    };
    const flood = (perFace: number, bytes: number, signal?: AbortSignal) =>
      Promise.all(
        FACES.flatMap((face) =>
          Array.from({ length: perFace }, (_, i) =>
            exchange(url, { face, operation: i % 2 === 0 ? CREATE_INBOX : SEND_EMAIL, streamBytes: bytes, signal }).then((answer) => ({ face, answer })),
          ),
        ),
      );
    // Warm up: code paths compiled and pools filled before the baseline is taken.
    for (const call of Object.values(legit)) await call();
    await flood(2, 4 * MiB);
    const baseline = await rssMb();

    let peak = baseline;
    const abort = new AbortController();
    let flooding = true;
    // Bounded either way: a server that buffers the bodies makes the sampler stop the flood at 400 MB.
    const sampler = (async () => {
      while (flooding) {
        peak = Math.max(peak, await rssMb());
        if (peak - baseline > 400) abort.abort();
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const served: Record<string, number> = { connect: 0, grpc: 0, grpcWeb: 0, rest: 0 };
    const legitLoop = (async () => {
      while (flooding) {
        for (const [face, call] of Object.entries(legit)) {
          await call();
          served[face]!++;
        }
      }
    })();
    legitLoop.catch(() => abort.abort());
    let answers;
    try {
      answers = await flood(20, GiB, abort.signal);
    } finally {
      flooding = false;
      await sampler;
    }
    await legitLoop;

    for (const { face, answer } of answers) {
      // A client too busy to read the answer before the server closes may see only the close: that ends it too.
      if (answer.failure === undefined) expectRefused(face, answer, REFUSALS.unauthenticated);
      else expect(answer.failure).toMatch(/^(ECONNRESET|EPIPE|ERR_HTTP2_STREAM_ERROR|ERR_HTTP2_SESSION_ERROR|stream closed)/);
      expect(answer.sentBytes).toBeLessThan(128 * MiB);
    }
    expect(Object.values(served).every((n) => n >= 1)).toBe(true);
    expect(peak - baseline).toBeLessThan(100);
  }, 180_000);

  test.each(FACES)("a Content-Length over the operation's limit is refused with 413 on the %s face without its body being read", async (face) => {
    const key = await newKey();
    const answer = await exchange(url, { face, operation: CREATE_INBOX, key, declaredLength: 2 * MiB });
    expectRefused(face, answer, REFUSALS.tooLarge);
    expect(answer.sentBytes).toBe(0);
  });

  test.each(FACES)("a streamed body over the operation's limit is refused with 413 on the %s face as it streams in", async (face) => {
    const key = await newKey();
    const answer = await exchange(url, { face, operation: CREATE_INBOX, key, streamBytes: GiB });
    expectRefused(face, answer, REFUSALS.tooLarge);
    expect(answer.sentBytes).toBeLessThan(64 * MiB);
  });

  test.each(FACES)("an unauthenticated request is answered 401 on the %s face before its body is read", async (face) => {
    const answer = await exchange(url, { face, operation: CREATE_INBOX, declaredLength: GiB });
    expectRefused(face, answer, REFUSALS.unauthenticated);
    expect(answer.sentBytes).toBe(0);
  });

  test("a client waiting for 100 Continue is never asked for its body without a key, and is asked with one", async () => {
    const refused = await exchange(url, { face: "rest", operation: CREATE_INBOX, expectContinue: true, streamBytes: GiB });
    expectRefused("rest", refused, REFUSALS.unauthenticated);
    expect({ continued: refused.continued, sentBytes: refused.sentBytes }).toEqual({ continued: false, sentBytes: 0 });

    const key = await newKey();
    const read = await exchange(url, { face: "rest", operation: CREATE_INBOX, key, expectContinue: true, streamBytes: 128 * 1024 });
    expect({ continued: read.continued, status: read.status, errorCode: read.errorCode }).toEqual({ continued: true, status: 400, errorCode: "invalid_json" });
  });

  test("an authenticated send within its larger limit is accepted on the JSON and Connect faces, while the same bytes are too large for an inbox", async () => {
    const key = await newKey();
    const headers = { "x-api-key": key, "content-type": "application/json" };
    const created = await fetch(`${url}/v1/inboxes`, { method: "POST", headers, body: JSON.stringify({ localPart: uniqueName("edge"), displayName: "Edge" }) });
    expect(created.status).toBe(201);
    const inbox = (await created.json()) as { id: string };
    const text = "Three mebibytes of text. ".repeat((3 * MiB) / 25);

    const viaJson = await fetch(`${url}/v1/inboxes/${inbox.id}/messages`, {
      method: "POST",
      headers: { ...headers, "idempotency-key": uniqueName("edge-json") },
      body: JSON.stringify({ to: [{ email: "alice@example.com" }], subject: "Large", text }),
    });
    expect(viaJson.status).toBe(202);
    await viaJson.arrayBuffer();
    const viaConnect = await clients(key).messages.sendMessage({
      inboxId: inbox.id,
      idempotencyKey: uniqueName("edge-connect"),
      to: [{ email: "bob@example.com" }],
      subject: "Large",
      text,
    });
    expect(viaConnect.submission?.id).toBeTruthy();

    const tooLarge = await fetch(`${url}/v1/inboxes`, { method: "POST", headers, body: JSON.stringify({ localPart: uniqueName("edge"), displayName: text }) });
    expect(tooLarge.status).toBe(413);
    expect(await tooLarge.json()).toEqual({ error: "payload_too_large", message: expect.any(String) });
  });
});

/** Resolves with what a raw socket received once the server closed it; rejects if it stays open for `ms`. */
function closedBy(socket: net.Socket, ms: number): Promise<string> {
  let received = "";
  socket.on("data", (d: Buffer) => (received += d.toString("latin1")));
  socket.on("error", () => undefined);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the connection was still open after ${ms} ms`)), ms);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(received);
    });
  });
}

function rawConnection(target: string, first?: string, localAddress?: string): net.Socket {
  const { hostname, port } = new URL(target);
  const socket = net.connect({ port: Number(port), host: hostname, ...(localAddress ? { localAddress } : {}) });
  if (first !== undefined) socket.write(first);
  return socket;
}

describe("slow and surplus connections", () => {
  const LIMITS = { API_HEADERS_TIMEOUT_MS: "1500", API_REQUEST_TIMEOUT_MS: "4000", API_MAX_CONNECTIONS: "150", API_MAX_CONNECTIONS_PER_PEER: "50" };
  // Generous deadlines: they only turn a hang into a failure; the limits under test are a few seconds.
  const DEADLINE_MS = 30_000;
  let slowUrl: string;
  beforeAll(async () => {
    slowUrl = (await startApiProcess(LIMITS)).url;
  });

  test("a client that never finishes its headers is cut off after API_HEADERS_TIMEOUT_MS, on HTTP/1.1 and h2c", async () => {
    const partial = closedBy(rawConnection(slowUrl, "POST /v1/inboxes HTTP/1.1\r\nHost: edge\r\nX-Api-Key: mbx_"), DEADLINE_MS);
    const silent = closedBy(rawConnection(slowUrl), DEADLINE_MS);
    const session = http2.connect(slowUrl);
    session.on("error", () => undefined);
    const h2Closed = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the h2 session was still open")), DEADLINE_MS);
      session.once("close", () => {
        clearTimeout(timer);
        resolve();
      });
    });
    expect(await partial).toMatch(/^HTTP\/1\.1 408 /);
    expect(await silent).toBe("");
    await h2Closed;
  });

  test("a request whose body does not arrive within API_REQUEST_TIMEOUT_MS is cut off, on HTTP/1.1 and h2c", async () => {
    const key = await newKey();
    const h1 = closedBy(
      rawConnection(slowUrl, `POST /v1/inboxes HTTP/1.1\r\nHost: edge\r\nX-Api-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"local`),
      DEADLINE_MS,
    );
    const session = http2.connect(slowUrl);
    session.on("error", () => undefined);
    const stream = session.request({ ":method": "POST", ":path": CREATE_INBOX.rpc, "content-type": "application/grpc", te: "trailers", "x-api-key": key });
    stream.on("error", () => undefined);
    stream.write(Buffer.from([0, 0, 0, 0, 100, 10]));
    const reset = await new Promise<number | undefined>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the h2 stream was still open")), DEADLINE_MS);
      stream.once("close", () => {
        clearTimeout(timer);
        resolve(stream.rstCode);
      });
    });
    session.destroy();
    expect(await h1).toMatch(/^HTTP\/1\.1 408 /);
    expect(reset).toBe(http2.constants.NGHTTP2_CANCEL);
  });

  /** Opens a keep-alive connection from `localAddress` and completes one request on it; false when the server closed it instead. */
  const openOne = (held: net.Socket[], localAddress: string) =>
    new Promise<boolean>((resolve) => {
      const socket = rawConnection(slowUrl, "GET /healthz HTTP/1.1\r\nHost: edge\r\n\r\n", localAddress);
      socket.on("error", () => undefined);
      socket.once("data", () => {
        held.push(socket);
        resolve(true);
      });
      socket.once("close", () => resolve(false));
    });

  test("connections beyond API_MAX_CONNECTIONS are closed at once, and a freed slot serves again", async () => {
    const limit = Number(LIMITS.API_MAX_CONNECTIONS);
    const held: net.Socket[] = [];
    // From four addresses, each under its own limit of API_MAX_CONNECTIONS_PER_PEER.
    const from = (i: number) => `127.0.8.${(i % 4) + 1}`;
    try {
      let refused = false;
      // Connections of the tests before may still hold a few slots: fill up to the limit, whatever is left of it.
      for (let i = 0; i <= limit && !refused; i++) refused = !(await openOne(held, from(i)));
      expect(refused).toBe(true);
      expect(held.length).toBeLessThanOrEqual(limit);
      expect(held.length).toBeGreaterThan(limit - 20);
      held.pop()!.destroy();
      let served = false;
      for (let i = 0; i < 50 && !served; i++) served = await openOne(held, from(i));
      expect(served).toBe(true);
    } finally {
      for (const socket of held) socket.destroy();
    }
  });

  test("one peer holds at most API_MAX_CONNECTIONS_PER_PEER connections: more from it are closed at once, other peers are served", async () => {
    const perPeer = Number(LIMITS.API_MAX_CONNECTIONS_PER_PEER);
    const held: net.Socket[] = [];
    try {
      // The test before filled the global limit and closed its sockets as it ended: the server counts them out only
      // when it sees them close, so the first connection may wait for that.
      expect(await eventuallyTrue(() => openOne(held, "127.0.9.1"))).toBe(true);
      for (let i = 1; i < perPeer; i++) expect(await openOne(held, "127.0.9.1")).toBe(true);
      // Even /healthz, which needs no key, is not answered on one more.
      expect(await openOne(held, "127.0.9.1")).toBe(false);
      expect(await openOne(held, "127.0.9.2")).toBe(true);
      held.shift()!.destroy();
      expect(await eventuallyTrue(() => openOne(held, "127.0.9.1"))).toBe(true);
    } finally {
      for (const socket of held) socket.destroy();
    }
  });
});

/** Tries `attempt` until it is true, for a few seconds (a closed socket is counted out when the server sees it close). */
async function eventuallyTrue(attempt: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < 50; i++) {
    if (await attempt()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

function getMe(key: string, localAddress: string): Promise<{ status: number; retryAfter?: string; error?: string }> {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url);
    http
      .get({ host: hostname, port, path: "/v1/me", headers: { "x-api-key": key }, localAddress, agent: false }, (res) => {
        let body = "";
        res.on("data", (d: Buffer) => (body += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode!, retryAfter: res.headers["retry-after"], error: (JSON.parse(body) as { error?: string }).error }));
      })
      .on("error", reject);
  });
}

test("an address that keeps failing with unknown keys gets 429 with Retry-After before any lookup, while keys from elsewhere and keys already known keep working", async () => {
  const known = await newKey();
  const fresh = await newKey();
  const [failing, elsewhere] = ["127.0.0.3", "127.0.0.4"];
  expect((await getMe(known, elsewhere)).status).toBe(200);
  // The failures of one minute window are counted: stay inside one.
  const msIntoMinute = Date.now() % 60_000;
  if (msIntoMinute > 45_000) await new Promise((r) => setTimeout(r, 60_000 - msIntoMinute + 100));

  const limit = AUTH_FAILURES_PER_MINUTE;
  const randomKey = () => `mbx_${randomBytes(8).toString("hex")}_${randomBytes(32).toString("base64url")}`;
  const statuses: number[] = [];
  for (let i = 0; i < limit; i++) statuses.push((await getMe(randomKey(), failing)).status);
  expect(statuses).toEqual(Array<number>(limit).fill(401));
  const refused = await getMe(randomKey(), failing);
  expect(refused).toEqual({ status: 429, retryAfter: expect.stringMatching(/^\d+$/), error: "too_many_failed_authentications" });
  expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(refused.retryAfter)).toBeLessThanOrEqual(60);

  expect((await getMe(known, failing)).status).toBe(200);
  expect((await getMe(fresh, failing)).status).toBe(429);
  expect((await getMe(fresh, elsewhere)).status).toBe(200);
});
