// What extraction takes and gives: plain data, so the inbound processor, the API mappers and the tests share it.

export interface ExtractionInput {
  /**
   * The sender's text part(s). Text that was made from the HTML is accepted too, but passing null (with the HTML)
   * is better: the HTML says what is hidden, quoted or prominent.
   */
  readonly text?: string | null;
  readonly html?: string | null;
  readonly subject?: string | null;
  /** The sender's address, used only to favour links to the sender's own domain. */
  readonly from?: string | null;
}

export interface ExtractedCode {
  /** As the reader types it: digits without the spaces or hyphens they were shown with; letter codes as shown. */
  readonly value: string;
  /** 0–1: how sure the rules are that this is a one-time code; codes are sorted by it. */
  readonly confidence: number;
  /** The line the code was found on (at most 120 characters), so a reader can judge it. */
  readonly context: string;
}

/**
 * `verification` confirms an address or account, `sign_in` is a magic sign-in link, `password_reset` resets a
 * password; at most one link of a message gets one of these three. `unsubscribe` marks list-leaving links.
 */
export type LinkKind = "verification" | "sign_in" | "password_reset" | "unsubscribe" | "other";

export interface ExtractedLink {
  /** An absolute http(s) URL as the WHATWG URL parser normalises it. */
  readonly url: string;
  /** The visible text of the anchor (or an image's alt text); "" for a bare URL in text. */
  readonly text: string;
  /** The host name, lower-case (IDNs in their xn-- form). */
  readonly domain: string;
  readonly kind: LinkKind;
}

export interface Extracted {
  /** The new text of the message: no quoted history, no forwarded block, no trailing signature. */
  readonly replyText: string;
  /** One-time codes, most likely first; empty when the message has none. */
  readonly codes: readonly ExtractedCode[];
  /** http(s) links in document order, each URL once, without those in quoted history or hidden. */
  readonly links: readonly ExtractedLink[];
}
