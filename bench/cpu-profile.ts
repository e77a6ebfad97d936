// Where a server's main-thread CPU time went, from a V8 .cpuprofile (node --cpu-prof), counted from the first HTTP
// request on (start-up excluded). Each sample is charged to the nearest frame outside Node's own code: its npm
// package or project directory. A socket write issued by the pg driver counts as pg; one issued by the JSON
// gateway counts as src/rest.
import { readFile } from "node:fs/promises";

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}

interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const TOP_OWNERS = 18;
const TOP_FUNCTIONS = 15;
const NODE_CORE = "node core (event loop, HTTP parser, sockets)";

/** The npm package or project directory of a frame; undefined for Node's own code and V8 builtins. */
function ownerOf(url: string): string | undefined {
  if (url === "" || url.startsWith("node:")) return undefined;
  const pkg = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1];
  const project = /\/(src|gen|bench|workflows)\/(.*)$/.exec(url);
  if (!project) return url;
  const [dir] = project[2]!.split("/");
  return project[2]!.includes("/") ? `${project[1]}/${dir}` : `${project[1]}/${project[2]}`;
}

export async function summarizeCpuProfile(file: string): Promise<string> {
  const profile = JSON.parse(await readFile(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const stackOf = function* (id: number) {
    for (let n: number | undefined = id; n !== undefined; n = parentOf.get(n)) yield byId.get(n)!.callFrame;
  };

  const owners = new Map<string, number>();
  const functions = new Map<string, number>();
  let serving = false;
  let busy = 0;
  profile.samples.forEach((id, i) => {
    serving ||= [...stackOf(id)].some((f) => f.url === "node:_http_server");
    const leaf = byId.get(id)!.callFrame;
    if (!serving || leaf.functionName === "(idle)") return;
    const dt = profile.timeDeltas[i] ?? 0;
    busy += dt;
    add(owners, chargedTo(leaf, stackOf(id)), dt);
    add(functions, `${leaf.functionName || "(anonymous)"} ${shortUrl(leaf.url)}${leaf.url ? `:${leaf.lineNumber + 1}` : ""}`, dt);
  });

  const pct = (t: number) => `${((t / busy) * 100).toFixed(1).padStart(5)}%`;
  const lines = [`${file}: ${(busy / 1e6).toFixed(1)} s of main-thread CPU while serving`, "  charged to"];
  for (const [owner, t] of top(owners, TOP_OWNERS)) lines.push(`${pct(t)}  ${owner}`);
  lines.push("  hottest functions (self time)");
  for (const [fn, t] of top(functions, TOP_FUNCTIONS)) lines.push(`${pct(t)}  ${fn}`);
  return lines.join("\n");
}

function chargedTo(leaf: CallFrame, stack: Iterable<CallFrame>): string {
  if (leaf.functionName === "(garbage collector)" || leaf.functionName === "(program)") return leaf.functionName;
  for (const frame of stack) {
    const owner = ownerOf(frame.url);
    if (owner !== undefined) return owner;
  }
  return NODE_CORE;
}

function add(map: Map<string, number>, key: string, value: number): void {
  map.set(key, (map.get(key) ?? 0) + value);
}

function top(map: ReadonlyMap<string, number>, n: number): [string, number][] {
  return [...map].sort((a, b) => b[1] - a[1]).slice(0, n);
}

function shortUrl(url: string): string {
  return url.replace(/^.*\/node_modules\//, "").replace(/^.*\/(src|gen|bench|workflows)\//, "$1/");
}
