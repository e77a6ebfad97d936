// Where a process's CPU time went, from a V8 .cpuprofile (node --cpu-prof; each thread writes its own file), for
// every benchmark. Each sample is charged to its nearest frame outside Node's own code (its npm package or project
// file or directory: a socket write issued by the pg driver counts as pg); "inclusive" counts every owner on the
// stack once. With `work`, start-up is left out: the main thread's samples count from the first one whose stack
// reaches a frame whose URL matches it (a worker thread, such as a workflow thread, has no start-up to leave out).
//
//   node --import tsx bench/cpu-profile.ts <file.cpuprofile>…
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

export interface ProfileOptions {
  /** The first line's name for the profile (default: the file's name). */
  readonly label?: string;
  /** Frames (by URL) that mark the process's work, not its start-up; without it every sample counts. */
  readonly work?: RegExp;
  /** Project code charged per directory (src/rest) instead of per file (src/rest/gateway.ts). */
  readonly byDirectory?: boolean;
  /** Rows per list. */
  readonly top?: number;
}

const NODE_CORE = "node core (event loop, HTTP parser, sockets)";
const PROJECT = /\/(src|gen|bench|workflows)\/(.*)$/;

/** The npm package or project file (or directory) of a frame; undefined for Node's own code and V8 builtins. */
function ownerOf(url: string, byDirectory: boolean): string | undefined {
  if (url === "" || url.startsWith("node:")) return undefined;
  const pkg = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1];
  const project = PROJECT.exec(url);
  if (project) return byDirectory && project[2]!.includes("/") ? `${project[1]}/${project[2]!.split("/")[0]}` : `${project[1]}/${project[2]}`;
  if (/workflow-bundle/.test(url)) return "workflow bundle";
  return url;
}

/** `CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile` → pid and thread number. */
export function profileIds(file: string): { pid: number; thread: number } | undefined {
  const m = /^CPU\.\d+\.\d+\.(\d+)\.(\d+)\.\d+\.cpuprofile$/.exec(basename(file));
  return m ? { pid: Number(m[1]), thread: Number(m[2]) } : undefined;
}

export async function summarizeCpuProfile(file: string, options: ProfileOptions = {}): Promise<string> {
  const { work, byDirectory = false, top = 14 } = options;
  const profile = JSON.parse(await readFile(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const functions = new Map<string, number>();
  const add = (map: Map<string, number>, key: string, dt: number) => map.set(key, (map.get(key) ?? 0) + dt);
  let working = work === undefined || (profileIds(file)?.thread ?? 0) > 0;
  let busy = 0;
  let counted = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    const stack: CallFrame[] = [];
    for (let n: number | undefined = id; n !== undefined; n = parentOf.get(n)) stack.push(byId.get(n)!.callFrame);
    working ||= stack.some((f) => work!.test(f.url));
    if (!working) return;
    counted += dt;
    const leaf = stack[0]!;
    if (leaf.functionName === "(idle)") return;
    busy += dt;
    const owners = stack.map((f) => ownerOf(f.url, byDirectory)).filter((o): o is string => o !== undefined);
    const special = leaf.functionName === "(garbage collector)" || leaf.functionName === "(program)" ? leaf.functionName : undefined;
    add(self, special ?? owners[0] ?? NODE_CORE, dt);
    for (const owner of new Set(owners)) add(inclusive, owner, dt);
    const where = leaf.url.replace(/^.*\/node_modules\//, "").replace(/^.*\/(src|gen|bench|workflows)\//, "$1/");
    add(functions, `${leaf.functionName || "(anonymous)"} ${where}${leaf.url ? `:${leaf.lineNumber + 1}` : ""}`, dt);
  });
  const pct = (t: number) => `${((t / Math.max(1, busy)) * 100).toFixed(1).padStart(5)}%`;
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
  const name = options.label ? `${options.label} (${basename(file)})` : file;
  const lines = [
    `${name}: ${(busy / 1e6).toFixed(1)} s busy of ${(counted / 1e6).toFixed(1)} s ${work ? "after start-up" : "profiled"}`,
    "  self time by owner",
  ];
  for (const [k, t] of sorted(self)) lines.push(`    ${pct(t)}  ${k}`);
  lines.push("  inclusive time by owner (on the stack)");
  for (const [k, t] of sorted(inclusive)) lines.push(`    ${pct(t)}  ${k}`);
  lines.push("  hottest functions (self)");
  for (const [k, t] of sorted(functions)) lines.push(`    ${pct(t)}  ${k}`);
  return lines.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const file of process.argv.slice(2)) console.log(await summarizeCpuProfile(file));
}
