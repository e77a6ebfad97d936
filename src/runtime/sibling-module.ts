// Modules started by path (a worker thread, the workflows) are named in the form their starter runs in: `.ts` from
// the sources (tsx, vitest), `.js` from the build in dist/ (src/cli/build.js).
import { extname } from "node:path";

/** Whether the module at this URL runs from the build. */
export function runsFromBuild(moduleUrl: string): boolean {
  return extname(new URL(moduleUrl).pathname) === ".js";
}

/** The module at `path` (relative, without extension) from `base`, in base's form. */
export function siblingModule(path: string, base: string): URL {
  return new URL(`${path}${runsFromBuild(base) ? ".js" : ".ts"}`, base);
}
