// URL attachments: a file a send names by an https URL, fetched once when the send is accepted, under the address
// policy of webhooks (src/webhooks/url-policy.ts): https on port 443 of a public host, every address its name
// resolves to checked as the connection is made (so a name that resolves to a private address is refused, DNS
// rebinding included), a few redirects followed, each checked the same way, within a time and a size limit. The
// fetched file is then kept like an upload (scanned, counted, expiring).
import type { IncomingMessage } from "node:http";
import { request } from "node:https";
import { isIP } from "node:net";
import type { Principal } from "../auth/principal.js";
import type { TenantStore } from "../db/tenant-store.js";
import { InvalidRequest, TooLarge, Unprocessable } from "../errors.js";
import { refusedAddress, type AddressPolicy } from "../net/address-policy.js";
import { createUpload, type UploadDeps, type UploadedFile } from "../uploads/uploads.js";
import { createGuardedLookup, hostOf, NonPublicAddressError, normalizeWebhookUrl, type ResolveAll } from "../webhooks/url-policy.js";

export interface UrlFetchOptions {
  /** Hosts exempt from the public-address check (WEBHOOK_ALLOW_HOSTS: development and tests only). */
  readonly policy: AddressPolicy;
  /** The whole fetch, redirects included, from the first lookup to the last byte. */
  readonly timeoutMs: number;
  readonly maxRedirects: number;
  /** The largest file taken: a larger answer is cut off as it arrives. */
  readonly maxBytes: number;
  /** Name resolution (the system's resolver unless a test gives its own). */
  readonly resolveAll?: ResolveAll;
}

export interface FetchedFile {
  /** The URL the file came from, after redirects. */
  readonly url: string;
  /** The name the answer gave (Content-Disposition), else the last segment of the URL's path; unsanitised. */
  readonly filename: string;
  /** The answer's Content-Type, or "" without one. */
  readonly contentType: string;
  readonly content: Buffer;
}

const USER_AGENT = "AgentMailbox-Attachments/1";
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * Fetches the file of a URL attachment; `label` names it in a refusal (attachments[2]). 422 attachment_url_refused
 * when the URL, or a redirect, is not one the policy allows (or there are too many redirects); 422
 * attachment_url_failed when no file comes (no connection, an answer other than 200, a compressed answer, the time
 * limit); 413 attachment_url_too_large past maxBytes.
 */
export async function fetchUrlAttachment(url: string, label: string, options: UrlFetchOptions): Promise<FetchedFile> {
  const lookup = createGuardedLookup(options.policy, options.resolveAll);
  const signal = AbortSignal.timeout(options.timeoutMs);
  let target = checkedUrl(url, label, options.policy);
  for (let redirects = 0; ; redirects++) {
    const res = await get(target, lookup, signal, label, options);
    const status = res.statusCode ?? 0;
    if (REDIRECTS.has(status)) {
      res.destroy();
      const location = res.headers.location;
      if (location === undefined) throw failed(label, `HTTP ${status} without a Location`);
      if (redirects >= options.maxRedirects) throw refused(label, `more than ${options.maxRedirects} redirects`);
      target = checkedUrl(resolveLocation(location, target, label), label, options.policy);
      continue;
    }
    if (status !== 200) {
      res.destroy();
      throw failed(label, `HTTP ${status}`);
    }
    const encoding = (res.headers["content-encoding"] ?? "identity").trim().toLowerCase();
    if (encoding !== "identity") {
      res.destroy();
      throw failed(label, `the answer is compressed (Content-Encoding: ${encoding.slice(0, 50)}); the file's own bytes are needed`);
    }
    const content = await bodyOf(res, label, options, signal);
    return { url: target.href, filename: filenameOf(res, target), contentType: res.headers["content-type"] ?? "", content };
  }
}

/**
 * Fetches a URL attachment and keeps its file like an upload: scanned, counted against storage, expiring. Answers
 * the upload with the bytes fetched; `deps.maxFileBytes` bounds the fetch.
 */
export async function keepUrlAttachment(
  store: TenantStore,
  principal: Principal,
  url: string,
  label: string,
  deps: UploadDeps & { readonly fetch: Omit<UrlFetchOptions, "maxBytes"> },
): Promise<UploadedFile> {
  const file = await fetchUrlAttachment(url, label, { ...deps.fetch, maxBytes: deps.maxFileBytes });
  return { upload: await createUpload(store, principal, { ...file, source: { kind: "url", url } }, deps), content: file.content };
}

function refused(label: string, why: string): Unprocessable {
  return new Unprocessable("attachment_url_refused", `${label}.url: ${why}`);
}

function failed(label: string, why: string): Unprocessable {
  return new Unprocessable("attachment_url_failed", `${label}.url: the fetch failed: ${why}`);
}

/** A URL the webhook rules allow (https, port 443, no credentials or fragment; a literal address must be public). */
function checkedUrl(raw: string, label: string, policy: AddressPolicy): URL {
  try {
    return new URL(normalizeWebhookUrl(raw, policy));
  } catch (e) {
    if (e instanceof InvalidRequest) throw refused(label, e.message.replace(/^url: /, ""));
    throw e;
  }
}

function resolveLocation(location: string, base: URL, label: string): string {
  try {
    return new URL(location, base).href;
  } catch {
    throw refused(label, `a redirect to ${JSON.stringify(location.slice(0, 200))}, which is not a URL`);
  }
}

/** One GET; resolves with the answer once its head is in. */
function get(target: URL, lookup: ReturnType<typeof createGuardedLookup>, signal: AbortSignal, label: string, options: UrlFetchOptions): Promise<IncomingMessage> {
  // A literal address needs no lookup, so the guarded lookup never sees it: checkedUrl refused a non-public one.
  const host = hostOf(target);
  const literalWhy = isIP(host) ? refusedAddress(options.policy, host, [host]) : undefined;
  if (literalWhy) return Promise.reject(refused(label, `${host} is not a public address (${literalWhy})`));
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      {
        method: "GET",
        lookup,
        signal,
        // A connection per fetch: none is kept for a tenant's URL.
        agent: false,
        headers: { "user-agent": USER_AGENT, "accept-encoding": "identity", accept: "*/*" },
      },
      resolve,
    );
    req.on("error", (e: Error) => reject(fetchError(e, label, options)));
    req.end();
  });
}

function fetchError(e: Error, label: string, options: UrlFetchOptions): Unprocessable {
  if (e instanceof NonPublicAddressError) return refused(label, e.message);
  if (e.name === "AbortError" || e.name === "TimeoutError") return failed(label, `no file within ${options.timeoutMs} ms`);
  return failed(label, e.message);
}

/** The answer's body, refused past maxBytes (declared, or as it arrives) and cut off at the time limit. */
function bodyOf(res: IncomingMessage, label: string, options: UrlFetchOptions, signal: AbortSignal): Promise<Buffer> {
  const tooLarge = () => new TooLarge("attachment_url_too_large", `${label}.url: the file is larger than an attachment may be (${options.maxBytes} bytes)`);
  const declared = Number(res.headers["content-length"] ?? Number.NaN);
  if (declared > options.maxBytes) {
    res.destroy();
    return Promise.reject(tooLarge());
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    // The first reason stands: destroying the answer makes it report being cut off as well.
    const fail = (e: Error) => {
      if (settled) return;
      settled = true;
      reject(e);
      res.destroy();
    };
    res.on("data", (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > options.maxBytes) return fail(tooLarge());
      chunks.push(chunk);
    });
    res.on("end", () => {
      settled = true;
      resolve(Buffer.concat(chunks, size));
    });
    // The request's signal ends the answer too: its error is the timeout's.
    res.on("error", (e: Error) => fail(signal.aborted ? failed(label, `no file within ${options.timeoutMs} ms`) : failed(label, e.message)));
    res.on("aborted", () => fail(failed(label, "the answer was cut off")));
  });
}

/** The filename of Content-Disposition (filename*, RFC 5987, before filename), else the URL path's last segment. */
export function filenameOf(res: Pick<IncomingMessage, "headers">, url: URL): string {
  const disposition = res.headers["content-disposition"] ?? "";
  const extended = /(?:^|;)\s*filename\*\s*=\s*([\w!#$&+.^`|~-]+)'[\w-]*'([^;\s]+)/i.exec(disposition);
  if (extended && /^utf-8$/i.test(extended[1]!)) {
    try {
      return decodeURIComponent(extended[2]!);
    } catch {
      // A malformed extended value: the plain one, or the path, instead.
    }
  }
  const plain = /(?:^|;)\s*filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/i.exec(disposition);
  if (plain) return plain[1] !== undefined ? plain[1].replace(/\\(.)/g, "$1") : plain[2]!;
  const segment = url.pathname.split("/").pop() ?? "";
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
