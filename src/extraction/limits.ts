// The bounds of extraction. A message may carry megabytes of hostile HTML; every stage reads at most these many
// characters, and every loop over them moves forward, so the work grows linearly with these caps and no further.

/** HTML read from the start of the body; verification mails put what matters in their first few kilobytes. */
export const MAX_HTML_CHARS = 1_000_000;
/** Visible text rendered from that HTML; rendering stops here. */
export const MAX_VISIBLE_CHARS = 200_000;
/** Text part read from the start. */
export const MAX_TEXT_CHARS = 200_000;
/** Lines looked at, for both text and rendered HTML. */
export const MAX_LINES = 20_000;
/** Longer lines are never an attribution, a header or a signature line. */
export const MAX_MARKER_LINE = 400;
/** Characters searched for codes, from the start of the new text (and of a forwarded message). */
export const MAX_CODE_SCAN_CHARS = 100_000;
/** Longest line searched for codes; the rest of a longer line is ignored. */
export const MAX_CODE_SCAN_LINE = 2_000;
export const MAX_CODES = 5;
/** Distinct links kept, in document order. */
export const MAX_LINKS = 100;
/** Anchors and bare URLs looked at before de-duplication. */
export const MAX_LINK_CANDIDATES = 1_000;
/** Longer URLs are dropped rather than cut (a cut URL is a different URL). */
export const MAX_URL_CHARS = 2_048;
export const MAX_LINK_TEXT = 200;
/** Open elements tracked; deeper nesting renders with the properties of the deepest tracked element. */
export const MAX_ELEMENT_DEPTH = 256;
/** How far down the open elements an end tag looks for its start tag. */
export const MAX_END_TAG_SEARCH = 64;
export const MAX_ATTRIBUTE_VALUE = 4_096;
export const MAX_STYLE_SHEET_CHARS = 100_000;
export const MAX_SUBJECT_CHARS = 1_000;
/** Hidden text kept for the safety analysis (what a preheader, a comment or a hidden block says). */
export const MAX_HIDDEN_CHARS = 50_000;
/** Separate pieces of hidden text kept, and chat-role tags. */
export const MAX_HIDDEN_RUNS = 200;
/** Code candidates read per line, and code (and decoy) words per line: a real line has a few of each. */
export const MAX_CODE_CANDIDATES_PER_LINE = 50;
export const MAX_KEYWORD_HITS_PER_LINE = 50;
/** Safe text kept; the rest is cut (a model is told it was). */
export const MAX_SAFE_TEXT_CHARS = 200_000;
/** Longest link target shown in safe text: the scheme and host whole, then as much of the path as fits. */
export const MAX_SHOWN_URL = 100;
/** Warnings kept per message, and per code. */
export const MAX_WARNINGS = 30;
export const MAX_WARNINGS_PER_CODE = 5;
/** Domain names read from a message's text and links for the look-alike check. */
export const MAX_DOMAIN_CANDIDATES = 1_000;
/** Longest evidence of a warning. */
export const MAX_EVIDENCE_CHARS = 160;
