// Where our roles' CPU went during the outbound benchmark, from V8 .cpuprofile files (BENCH_CPU_PROF=1 runs the api
// and worker roles with --cpu-prof; every thread writes its own file when the role stops). Start-up is left out:
// samples count from the first one whose stack reaches the role's work (the api: Node's HTTP server; the worker's
// main thread: an activity; a workflow thread: everything). Each sample is charged to its nearest frame outside
// Node's own code (npm package or project file); "inclusive" counts every owner on the stack.
//
//   node --import tsx bench/outbound-profile.ts <file.cpuprofile>…
import { readFile } from "node:fs/promises";
import { basename } from "node:path";

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface Profile {
  readonly nodes: readonly { readonly id: number; readonly callFrame: CallFrame; readonly children?: readonly number[] }[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const NODE_CORE = "node core";
/** Stacks that mark the role's work, not its start-up. */
const WORK = /node:_http_server|\/src\/temporal\/activities\/|\/src\/outbound\//;

function ownerOf(url: string): string | undefined {
  if (url === "" || url.startsWith("node:")) return undefined;
  const pkg = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1];
  const project = /\/(src|gen|bench|workflows)\/(.*)$/.exec(url);
  if (project) return `${project[1]}/${project[2]}`;
  if (/workflow-bundle/.test(url)) return "workflow bundle";
  return url;
}

/** `CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile` → pid and thread number. */
export function profileIds(file: string): { pid: number; thread: number } | undefined {
  const m = /^CPU\.\d+\.\d+\.(\d+)\.(\d+)\.\d+\.cpuprofile$/.exec(basename(file));
  return m ? { pid: Number(m[1]), thread: Number(m[2]) } : undefined;
}

export async function summarizeOutboundProfile(file: string, label: string, top = 14): Promise<string> {
  const profile = JSON.parse(await readFile(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const functions = new Map<string, number>();
  const add = (map: Map<string, number>, key: string, dt: number) => map.set(key, (map.get(key) ?? 0) + dt);
  // A thread other than the main one (a workflow thread) has no start-up to leave out.
  let working = (profileIds(file)?.thread ?? 0) > 0;
  let busy = 0;
  let counted = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    const stack: CallFrame[] = [];
    for (let n: number | undefined = id; n !== undefined; n = parentOf.get(n)) stack.push(byId.get(n)!.callFrame);
    working ||= stack.some((f) => WORK.test(f.url));
    if (!working) return;
    counted += dt;
    const leaf = stack[0]!;
    if (leaf.functionName === "(idle)") return;
    busy += dt;
    const owners = stack.map((f) => ownerOf(f.url)).filter((o): o is string => o !== undefined);
    const special = leaf.functionName === "(garbage collector)" || leaf.functionName === "(program)" ? leaf.functionName : undefined;
    add(self, special ?? owners[0] ?? NODE_CORE, dt);
    for (const owner of new Set(owners)) add(inclusive, owner, dt);
    add(functions, `${leaf.functionName || "(anonymous)"} ${leaf.url.replace(/^.*\/node_modules\//, "").replace(/^.*\/(src|bench|workflows)\//, "$1/")}:${leaf.lineNumber + 1}`, dt);
  });
  const pct = (t: number) => `${((t / Math.max(1, busy)) * 100).toFixed(1).padStart(5)}%`;
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
  const lines = [`${label} (${basename(file)}): ${(busy / 1e6).toFixed(1)} s busy of ${(counted / 1e6).toFixed(1)} s after start-up`, "  self time by owner"];
  for (const [k, t] of sorted(self)) lines.push(`    ${pct(t)}  ${k}`);
  lines.push("  inclusive time by owner (on the stack)");
  for (const [k, t] of sorted(inclusive)) lines.push(`    ${pct(t)}  ${k}`);
  lines.push("  hottest functions (self)");
  for (const [k, t] of sorted(functions)) lines.push(`    ${pct(t)}  ${k}`);
  return lines.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const file of process.argv.slice(2)) console.log(await summarizeOutboundProfile(file, "profile"));
}
