// The production build: every TypeScript file of src/, workflows/ and gen/ transpiled on its own into dist/ (the
// same tree, so paths taken from import.meta.url hold), and the Temporal workflow bundle made once here instead of
// at every worker start. esbuild only strips types; `npm run check` (tsc) is what type-checks.
//
//   node src/cli/build.js             build
//   node src/cli/build.js --if-stale  build unless dist/ is newer than every source (npm start and npm test do this)
//
// Plain JavaScript: the `mailbox` bin reads buildIsFresh() from here before anything can transpile.
import { readdirSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const DIST = join(ROOT, "dist");
/** Written last by a build that succeeded; its modification time is the build's. */
const STAMP = join(DIST, "build.json");
/** What a build is made of: a change to any file or folder under these makes it stale. */
const SOURCES = ["src", "workflows", "gen"];
const INPUTS = [...SOURCES, "tsconfig.json", "package-lock.json", "node_modules/.package-lock.json"];

/** A checkout has the TypeScript sources; the container image has only the build. */
export function hasSources() {
  return statSync(join(ROOT, "src/main.ts"), { throwIfNoEntry: false }) !== undefined;
}

/** Whether dist/ holds a complete build made after the last change to its inputs. */
export function buildIsFresh() {
  const built = statSync(STAMP, { throwIfNoEntry: false });
  return built !== undefined && INPUTS.every((input) => newestChange(join(ROOT, input)) <= built.mtimeMs);
}

/** The latest modification time of a file, or of a folder and everything in it (a deleted file changes its folder). */
function newestChange(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (stat === undefined) return 0;
  let newest = stat.mtimeMs;
  if (stat.isDirectory()) for (const name of readdirSync(path)) newest = Math.max(newest, newestChange(join(path, name)));
  return newest;
}

function typescriptFiles(dir) {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts"))
    .map((entry) => join(entry.parentPath, entry.name));
}

export async function build() {
  const started = new Date();
  const [{ build: esbuild, version }, { bundleWorkflowCode }] = await Promise.all([import("esbuild"), import("@temporalio/worker")]);
  // Built beside dist/ and renamed into place, so dist/ is never half a build.
  const out = join(ROOT, `.dist-${process.pid}`);
  rmSync(out, { recursive: true, force: true });
  try {
    await esbuild({
      entryPoints: SOURCES.flatMap(typescriptFiles),
      outdir: out,
      outbase: ROOT,
      platform: "node",
      format: "esm",
      target: "node22",
      sourcemap: true,
      sourcesContent: false,
      tsconfig: join(ROOT, "tsconfig.json"),
      logLevel: "warning",
    });
    const bundle = await bundleWorkflowCode({ workflowsPath: join(out, "workflows/index.js"), logger: quietLogger });
    writeFileSync(join(out, "workflow-bundle.js"), bundle.code);
    writeFileSync(join(out, "build.json"), `${JSON.stringify({ node: process.version, esbuild: version })}\n`);
    // Dated when the build began: a source saved while it ran is newer, and so is seen.
    utimesSync(join(out, "build.json"), started, started);
    rmSync(DIST, { recursive: true, force: true });
    renameSync(out, DIST);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
  const seconds = ((Date.now() - started.getTime()) / 1000).toFixed(1);
  process.stderr.write(`built ${relative(process.cwd(), DIST) || "."}/ (the workflow bundle included) in ${seconds} s\n`);
}

/** The bundler's progress lines stay out of the build's output; its warnings and errors do not. */
const quietLogger = {
  log: (level, message) => (level === "WARN" || level === "ERROR" ? process.stderr.write(`${message}\n`) : undefined),
  trace() {},
  debug() {},
  info() {},
  warn: (message) => process.stderr.write(`${message}\n`),
  error: (message) => process.stderr.write(`${message}\n`),
};

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const ifStale = process.argv.includes("--if-stale");
  if (!(ifStale && buildIsFresh())) {
    await build().catch((e) => {
      process.stderr.write(`build failed: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    });
  }
}
