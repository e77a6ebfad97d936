// What extraction takes and gives: plain data, so the inbound processor, the API mappers and the tests share it.

export interface ExtractionInput {
  /**
   * The sender's text part(s). Text that was made from the HTML is accepted too, but passing null (with the HTML)
   * is better: the HTML says what is hidden, quoted or prominent.
   */
  readonly text?: string | null;
  readonly html?: string | null;
  readonly subject?: string | null;
  /** The sender's (From) address: links to its domain are favoured, and look-alikes of its domain are reported. */
  readonly from?: string | null;
  /** The Reply-To address, shown as the evidence of `reply_to_diverges`. */
  readonly replyTo?: string | null;
  /** What sender authentication found (issue 16 item 1); omitted or not evaluated: no sender warnings. */
  readonly authentication?: SenderAuthentication | null;
}

export interface SenderAuthentication {
  /** Whether authentication ran for this message; when it did not, the other fields mean nothing. */
  readonly evaluated: boolean;
  /** DMARC passed: an SPF or DKIM pass aligned with the From domain. */
  readonly senderAuthenticated: boolean;
  /** The Reply-To's organizational domain differs from an authenticated From's. */
  readonly replyToDiverges: boolean;
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

/**
 * What a safety warning is about: `hidden_text` (text a reader does not see), `invisible_characters` (zero-width,
 * bidirectional or tag characters used as a trick), `link_text_mismatch` (a link's text names one domain, its
 * target is another), `lookalike_domain` (a domain imitating a brand's, the sender's or another of the message's),
 * `instruction_like` (text addressed to an AI, or shaped like a prompt or a tool call), `sender_unauthenticated`
 * (the From domain did not pass DMARC) and `reply_to_diverges` (replies go to another organization).
 */
export type WarningCode =
  | "hidden_text"
  | "invisible_characters"
  | "link_text_mismatch"
  | "lookalike_domain"
  | "instruction_like"
  | "sender_unauthenticated"
  | "reply_to_diverges";

/**
 * Where a warning's evidence is: the subject, the From or Reply-To address, the text part, the HTML part, or a
 * link's target.
 */
export type WarningPart = "subject" | "from" | "reply_to" | "text" | "html" | "link";

export interface SafetyWarning {
  readonly code: WarningCode;
  /**
   * The kind of finding within its code. hidden_text: how it was hidden (display_none, visibility_hidden,
   * opacity_zero, zero_size, offscreen, clipped, hidden_attribute, style_sheet, tiny_font, same_colour,
   * conditional_comment, template). invisible_characters: zero_width_in_word, zero_width_run, bidi_control,
   * tag_characters, variation_selectors. lookalike_domain: mixed_script, confusable, typo, brand_in_subdomain,
   * brand_token. instruction_like: ignore_instructions, addressed_to_ai, system_prompt, conceal_from_user,
   * role_marker, tool_call. link_text_mismatch: text_names_other_domain. The sender codes: dmarc (or "").
   */
  readonly detail: string;
  /** What was found, as the message has it (at most 160 characters; invisible characters written <U+200B>). */
  readonly evidence: string;
  readonly part: WarningPart;
  /**
   * Where in its part: the index (UTF-16) of the text node or line the evidence starts in (the HTML source for
   * `html`); null when it is not one place (an address, a link).
   */
  readonly offset: number | null;
  /** Whether a reader of the message does not see it (hidden HTML, a comment, the text part of an HTML mail). */
  readonly hidden: boolean;
  /** lookalike_domain: the look-alike host; link_text_mismatch: the target's host (ASCII, xn-- for IDNs). */
  readonly domain: string | null;
  /** lookalike_domain: the domain it imitates; link_text_mismatch: the domain the link's text names. */
  readonly imitates: string | null;
}

/**
 * How careful a reader should be (the rule is in safety.ts, riskOf): `high` for an instruction a reader cannot
 * see, an instruction with a disguise or a forged-looking sender, or a look-alike sender or link; `review` for any
 * other warning; `low` for none (or only a diverging Reply-To).
 */
export type Risk = "low" | "review" | "high";

export interface Extracted {
  /** The new text of the message: no quoted history, no forwarded block, no trailing signature. */
  readonly replyText: string;
  /** One-time codes, most likely first; empty when the message has none. */
  readonly codes: readonly ExtractedCode[];
  /** http(s) links in document order, each URL once, without those in quoted history or hidden. */
  readonly links: readonly ExtractedLink[];
  /**
   * The message as a model should read it: the text a reader sees (HTML rendered without hidden content, zero-width
   * and bidirectional characters removed), each link followed by its real target in brackets, look-alike domains
   * in their xn-- form. The whole body, quoted history included; at most MAX_SAFE_TEXT_CHARS.
   */
  readonly safeText: string;
  /** What in the message may try to deceive its reader, most telling first (at most MAX_WARNINGS). */
  readonly warnings: readonly SafetyWarning[];
  readonly risk: Risk;
}
