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
