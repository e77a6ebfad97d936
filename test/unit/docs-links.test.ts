// The docs stay walkable: every relative link in README.md and docs/ reaches a file or folder of the repository
// (source files included, so a module that moves breaks its link here, not in a reader's hands), every #anchor is a
// heading of its target as GitHub numbers them, and every repository path the docs name in code spans exists.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { githubSlug, headingAnchors, inlineCode, links } from "../support/markdown.js";

const ROOT = resolve(new URL("../../", import.meta.url).pathname);
const DOCS = [join(ROOT, "README.md"), ...readdirSync(join(ROOT, "docs"), { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".md")).map((f) => join(ROOT, "docs", f))];
/** Top-level folders of the repository whose paths the docs name in code spans (`src/config.ts`). */
const REPOSITORY_PATH = /^(src|test|bench|deploy|proto|workflows|scripts|gen|docs)\/[\w./@+-]*$/;

const read = (file: string) => readFileSync(file, "utf8");
const at = (file: string, line: number) => `${relative(ROOT, file)}:${line}`;

/** Why `target`, linked from `file`, does not resolve; undefined when it does. */
function brokenLink(file: string, target: string): string | undefined {
  if (/^([a-z][a-z0-9+.-]*:|\/\/)/i.test(target)) return undefined; // another site: not ours to check
  const [rawPath = "", anchor] = target.split("#", 2);
  if (rawPath.startsWith("/")) return "an absolute path: GitHub resolves it against the site, not the repository";
  const path = rawPath === "" ? file : resolve(dirname(file), decodeURIComponent(rawPath));
  if (relative(ROOT, path).startsWith("..")) return "leaves the repository (a clone does not have it)";
  if (!existsSync(path)) return "no such file or folder";
  if (anchor === undefined) return undefined;
  if (statSync(path).isDirectory()) return `an anchor on a folder`;
  if (path.endsWith(".md")) return headingAnchors(read(path)).has(anchor) ? undefined : `no heading of ${relative(ROOT, path)} has the anchor #${anchor}`;
  const lines = /^L(\d+)(?:-L(\d+))?$/.exec(anchor);
  const count = read(path).split("\n").length;
  return lines && Number(lines[2] ?? lines[1]) <= count ? undefined : `#${anchor} is no line of ${relative(ROOT, path)} (${count} lines)`;
}

describe("the docs' links", () => {
  test("README.md and docs/ are found", () => {
    expect(DOCS.length).toBeGreaterThan(5);
    expect(DOCS.map((f) => relative(ROOT, f))).toContain("docs/configuration.md");
  });

  test("every relative link resolves to a file or folder of the repository, and every anchor to a heading", () => {
    const checked: string[] = [];
    const broken = DOCS.flatMap((file) =>
      links(read(file)).flatMap(({ line, target }) => {
        checked.push(target);
        const why = brokenLink(file, target);
        return why === undefined ? [] : [`${at(file, line)} (${target}): ${why}`];
      }),
    );
    expect(broken).toEqual([]);
    // The docs link to each other and into the sources; a parser that found none would pass anything.
    expect(checked.filter((t) => t.includes("../src/")).length).toBeGreaterThan(10);
    expect(checked.filter((t) => t.includes("#")).length).toBeGreaterThan(10);
  });

  test("every repository path named in a code span exists", () => {
    const missing = DOCS.flatMap((file) =>
      inlineCode(read(file))
        .filter(({ code }) => REPOSITORY_PATH.test(code))
        .filter(({ code }) => !existsSync(join(ROOT, code)))
        .map(({ line, code }) => `${at(file, line)}: ${code}`),
    );
    expect(missing).toEqual([]);
  });

  test("the link checker catches what it must (a missing file, a missing anchor, a path out of the repository)", () => {
    const readme = join(ROOT, "README.md");
    expect(brokenLink(readme, "docs/configuration.md")).toBeUndefined();
    expect(brokenLink(readme, "docs/no-such-page.md")).toBe("no such file or folder");
    expect(brokenLink(readme, "src/config.ts")).toBeUndefined();
    expect(brokenLink(readme, "src/config.ts#L1")).toBeUndefined();
    expect(brokenLink(readme, "src/config.ts#L999999")).toMatch(/is no line/);
    expect(brokenLink(readme, "docs/configuration.md#no-such-heading")).toMatch(/no heading/);
    expect(brokenLink(readme, "../shared/spec/agent-mailbox-api.md")).toMatch(/leaves the repository/);
    expect(brokenLink(readme, "https://example.com/x#y")).toBeUndefined();
  });

  test("anchors are made as GitHub makes them", () => {
    expect(githubSlug("For agents: MCP")).toBe("for-agents-mcp");
    expect(githubSlug("The `mailbox` command: `npm run bench:cli`")).toBe("the-mailbox-command-npm-run-benchcli");
    expect(githubSlug("Sending twice only on purpose")).toBe("sending-twice-only-on-purpose");
    expect(githubSlug("Feedback reports and outbound next hops")).toBe("feedback-reports-and-outbound-next-hops");
    expect(githubSlug("Delivery, and its data (`/v1/send` too)")).toBe("delivery-and-its-data-v1send-too");
    expect(githubSlug("DATA_DIR and TOOLS_DIR")).toBe("data_dir-and-tools_dir");
    expect([...headingAnchors("# A\n\n## A\n\n```\n# not a heading\n```\n\n### A\n")]).toEqual(["a", "a-1", "a-2"]);
  });
});
