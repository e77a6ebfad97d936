// Where the tools pinned by version are installed (the Temporal CLI; the tests' helm, hadolint, schemathesis and
// Python mail tools): a cache of the user's, shared by every checkout, as npm keeps ~/.npm and Playwright its
// browsers. Each tool lives in a folder named by its version, so checkouts that pin different versions share it too,
// and a fresh clone finds what an earlier one installed instead of downloading it again.
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";

/** `$XDG_CACHE_HOME/agent-mailbox/tools`, else `~/.cache/agent-mailbox/tools` (XDG ignores a relative XDG_CACHE_HOME). */
export function defaultToolsDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env["XDG_CACHE_HOME"];
  const cache = xdg && isAbsolute(xdg) ? xdg : join(homedir(), ".cache");
  return join(cache, "agent-mailbox", "tools");
}

/** TOOLS_DIR when set (relative to the working directory), else the shared default. */
export function toolsDir(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env["TOOLS_DIR"] || defaultToolsDir(env));
}
