// Just enough of GitHub-flavoured Markdown for the docs tests: the prose lines outside code blocks, the headings
// and the anchors GitHub makes of them, relative links, code spans and tables.

/** A line of prose: not inside a fenced or indented code block. */
export interface ProseLine {
  /** 1-based. */
  readonly line: number;
  readonly text: string;
}

/** The lines of `markdown` outside fenced (``` or ~~~) and indented code blocks. */
export function proseLines(markdown: string): ProseLine[] {
  const out: ProseLine[] = [];
  let fence: string | undefined;
  let previousBlankOrCode = true;
  markdown.split("\n").forEach((text, i) => {
    const opener = /^ {0,3}(`{3,}|~{3,})/.exec(text)?.[1];
    if (fence !== undefined) {
      if (opener !== undefined && opener[0] === fence[0] && opener.length >= fence.length && text.trim() === opener) fence = undefined;
      return;
    }
    if (opener !== undefined) {
      fence = opener;
      return;
    }
    // An indented code block starts after a blank line (within a list, 4 spaces are a continuation: not used here).
    const indentedCode = /^( {4}|\t)/.test(text) && previousBlankOrCode;
    previousBlankOrCode = text.trim() === "" || indentedCode;
    if (!indentedCode) out.push({ line: i + 1, text });
  });
  return out;
}

/** Code spans of a line, and the line with each replaced by its content's placeholder (`code`). */
function codeSpans(text: string): { spans: string[]; rest: string } {
  const spans: string[] = [];
  const rest = text.replace(/(`+)(.+?)\1(?!`)/g, (_, _ticks: string, content: string) => {
    spans.push(content.trim());
    return "`code`";
  });
  return { spans, rest };
}

/** The anchor GitHub gives a heading's text: lower case, punctuation dropped, spaces as hyphens (github-slugger). */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/(`+)(.+?)\1/g, "$2") // code spans: their content
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // links and images: their text
    .replace(/<[^>]+>/g, "") // inline HTML
    .replace(/(\*\*?)(\S.*?\S|\S)\1/g, "$2") // emphasis with * anywhere
    .replace(/(?<![\p{L}\p{N}])(__?)(\S.*?\S|\S)\1(?![\p{L}\p{N}])/gu, "$2") // with _ only outside words
    .trim();
  return text.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "").replace(/ /g, "-");
}

/** Every anchor of a Markdown document's headings, numbered as GitHub numbers repeats (`x`, `x-1`, `x-2`). */
export function headingAnchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const { text } of proseLines(markdown)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(\s+#+)?\s*$/.exec(text)?.[1];
    if (heading === undefined) continue;
    const slug = githubSlug(heading);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

export interface Link {
  readonly line: number;
  readonly target: string;
}

/** Inline links and images, and reference definitions, outside code. */
export function links(markdown: string): Link[] {
  const out: Link[] = [];
  for (const { line, text } of proseLines(markdown)) {
    const { rest } = codeSpans(text);
    for (const m of rest.matchAll(/!?\[(?:[^\][]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ line, target: m[1]! });
    const definition = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(\s+"[^"]*")?\s*$/.exec(rest);
    if (definition) out.push({ line, target: definition[1]! });
  }
  return out;
}

/** Code spans outside code blocks, with their lines. */
export function inlineCode(markdown: string): { line: number; code: string }[] {
  return proseLines(markdown).flatMap(({ line, text }) => codeSpans(text).spans.map((code) => ({ line, code })));
}

export interface TableRow {
  readonly line: number;
  readonly cells: string[];
}

/** The body rows of every table (a header row, a separator row, then rows), cells trimmed. */
export function tableRows(markdown: string): TableRow[] {
  const lines = proseLines(markdown);
  const rows: TableRow[] = [];
  const cellsOf = (text: string) =>
    text
      .trim()
      .replace(/^\||\|$/g, "")
      .split(/(?<!\\)\|/)
      .map((c) => c.trim());
  for (let i = 1; i < lines.length; i++) {
    const separator = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(lines[i]!.text);
    if (!separator || !lines[i - 1]!.text.includes("|") || lines[i - 1]!.line !== lines[i]!.line - 1) continue;
    for (let j = i + 1; j < lines.length && lines[j]!.line === lines[j - 1]!.line + 1 && lines[j]!.text.includes("|"); j++) {
      rows.push({ line: lines[j]!.line, cells: cellsOf(lines[j]!.text) });
    }
  }
  return rows;
}
