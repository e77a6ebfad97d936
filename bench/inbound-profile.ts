// Where the smtp role's CPU went, from a V8 .cpuprofile (BENCH_CPU_PROF=1 runs the role with --cpu-prof; each
// thread writes its own file, the main thread's first). Every non-idle sample counts, start-up included.
//   self:      the sample's nearest frame outside Node's own code (its npm package or project file)
//   inclusive: every package or project file on the sample's stack (a frame under several counts for each)
import { readFile } from "node:fs/promises";

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

function ownerOf(url: string): string | undefined {
  if (url === "" || url.startsWith("node:")) return undefined;
  const pkg = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1];
  const project = /\/(src|gen|bench|workflows)\/(.*)$/.exec(url);
  return project ? `${project[1]}/${project[2]}` : url;
}

export async function summarizeInboundProfile(file: string, top = 14): Promise<string> {
  const profile = JSON.parse(await readFile(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const functions = new Map<string, number>();
  let busy = 0;
  let total = 0;
  const add = (map: Map<string, number>, key: string, dt: number) => map.set(key, (map.get(key) ?? 0) + dt);
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    total += dt;
    const leaf = byId.get(id)!.callFrame;
    if (leaf.functionName === "(idle)") return;
    busy += dt;
    const stack: CallFrame[] = [];
    for (let n: number | undefined = id; n !== undefined; n = parentOf.get(n)) stack.push(byId.get(n)!.callFrame);
    const owners = stack.map((f) => ownerOf(f.url)).filter((o): o is string => o !== undefined);
    const special = leaf.functionName === "(garbage collector)" || leaf.functionName === "(program)" ? leaf.functionName : undefined;
    add(self, special ?? owners[0] ?? NODE_CORE, dt);
    for (const owner of new Set(owners)) add(inclusive, owner, dt);
    add(functions, `${leaf.functionName || "(anonymous)"} ${leaf.url.replace(/^.*\/node_modules\//, "").replace(/^.*\/(src|bench)\//, "$1/")}:${leaf.lineNumber + 1}`, dt);
  });
  const pct = (t: number) => `${((t / busy) * 100).toFixed(1).padStart(5)}%`;
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
  const lines = [`${file}: ${(busy / 1e6).toFixed(1)} s busy of ${(total / 1e6).toFixed(1)} s profiled`, "  self time by owner"];
  for (const [k, t] of sorted(self)) lines.push(`    ${pct(t)}  ${k}`);
  lines.push("  inclusive time by owner (on the stack)");
  for (const [k, t] of sorted(inclusive)) lines.push(`    ${pct(t)}  ${k}`);
  lines.push("  hottest functions (self)");
  for (const [k, t] of sorted(functions)) lines.push(`    ${pct(t)}  ${k}`);
  return lines.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const file of process.argv.slice(2)) console.log(await summarizeInboundProfile(file));
}
