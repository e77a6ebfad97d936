// Where a server's CPU time went, from a V8 .cpuprofile (node --cpu-prof): self and inclusive time per code area
// (a package, a project directory, Node internals, GC), and the hottest functions.
import { readFile } from "node:fs/promises";

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}

interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const TOP_AREAS = 16;
const TOP_FUNCTIONS = 20;

/** The code area of a frame: an npm package, a project directory, a Node module, or a V8 pseudo-frame. */
function areaOf({ functionName, url }: ProfileNode["callFrame"]): string {
  if (url === "") return functionName.startsWith("(") ? functionName : "(native)";
  const pkg = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1]!;
  const node = /^node:(?:internal\/)?([^/]+)/.exec(url);
  if (node) return `node:${node[1]!.replace(/\.js$/, "")}`;
  const project = /\/(src|gen|bench|workflows)\/(?:([^/]+)\/)?/.exec(url);
  if (project) return project[2] ? `${project[1]}/${project[2]}` : project[1]!;
  return url;
}

export async function summarizeCpuProfile(file: string): Promise<string> {
  const profile = JSON.parse(await readFile(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);

  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const functions = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    total += dt;
    const leaf = byId.get(id)!;
    add(self, areaOf(leaf.callFrame), dt);
    const { functionName, url, lineNumber } = leaf.callFrame;
    add(functions, `${functionName || "(anonymous)"} ${shortUrl(url)}:${lineNumber + 1}`, dt);
    // Each area once per sample, however often it recurs on the stack.
    const seen = new Set<string>();
    for (let n: number | undefined = id; n !== undefined; n = parentOf.get(n)) seen.add(areaOf(byId.get(n)!.callFrame));
    for (const area of seen) add(inclusive, area, dt);
  });

  const idle = self.get("(idle)") ?? 0;
  const busy = total - idle;
  const pct = (t: number) => `${((t / busy) * 100).toFixed(1).padStart(5)}%`;
  const lines = [`${file}: ${(total / 1e6).toFixed(1)} s profiled, ${(busy / 1e6).toFixed(1)} s busy (shares below are of busy time)`];
  lines.push("  self  inclusive  area");
  for (const [area, t] of top(self, TOP_AREAS)) {
    if (area !== "(idle)") lines.push(`${pct(t)}  ${pct(inclusive.get(area) ?? 0)}     ${area}`);
  }
  lines.push("  self  function");
  for (const [fn, t] of top(functions, TOP_FUNCTIONS)) if (!fn.startsWith("(idle)")) lines.push(`${pct(t)}  ${fn}`);
  return lines.join("\n");
}

function add(map: Map<string, number>, key: string, value: number): void {
  map.set(key, (map.get(key) ?? 0) + value);
}

function top(map: ReadonlyMap<string, number>, n: number): [string, number][] {
  return [...map].sort((a, b) => b[1] - a[1]).slice(0, n);
}

function shortUrl(url: string): string {
  return url.replace(/^.*\/node_modules\//, "").replace(/^file:\/\/.*?\/(src|gen|bench|workflows)\//, "$1/");
}
