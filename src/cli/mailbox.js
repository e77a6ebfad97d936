#!/usr/bin/env node
// The `mailbox` bin. Plain JavaScript that old Nodes parse too, so the version check runs before anything else is
// loaded: on an older Node the service would start, answer 250 to mail, and then fail to parse every message.
// The version lives in package.json's own `minimumNodeVersion`, not in `engines`: npm runs on the machine's Node,
// and with `engines` every `npx mailbox …` on an older one printed a five-line EBADENGINE warning before the command.
import { readFileSync } from "node:fs";
import nodeModule from "node:module";

const required = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")).minimumNodeVersion;
const [needMajor, needMinor] = required.split(".").map(Number);
const [major, minor] = process.versions.node.split(".").map(Number);
if (major < needMajor || (major === needMajor && minor < needMinor)) {
  process.stderr.write(
    `mailbox needs Node.js ${required} or newer; this is Node.js ${process.version} (${process.execPath}).\n` +
      "Run it through npm, which puts the project's own Node 24 (the `node` package, in node_modules/.bin) first:\n" +
      "  npm start    npx mailbox <command>    npm run mailbox -- <command>\n" +
      "or install Node.js 24 (https://nodejs.org/en/download, or `nvm install 24`).\n",
  );
  process.exit(1);
}

// The service's commands run with glibc's mmap threshold fixed. By default glibc raises the threshold to the size of
// the largest block freed so far (up to 32 MiB), after which message-sized buffers come from heaps that do not
// shrink: a burst of large mail left the process ~100 MB larger at its peak and after it
// (test/e2e/smtp-memory-large-mail.test.ts). glibc reads the variable once, at start, so the command starts itself
// again with it (the same process id); a value the environment gives is kept, and other systems ignore it.
const SERVICE_COMMANDS = ["start", "serve", "worker"];
// The service's threads collect their garbage once idle after large mail (src/runtime/idle-reclaim.ts): on for the
// service's commands unless the environment says otherwise, off for anything else that loads the modules (tests).
if (SERVICE_COMMANDS.includes(process.argv[2]) && process.env.IDLE_MEMORY_RECLAIM === undefined) process.env.IDLE_MEMORY_RECLAIM = "1";
if (process.platform === "linux" && process.env.MALLOC_MMAP_THRESHOLD_ === undefined && SERVICE_COMMANDS.includes(process.argv[2])) {
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    ...process.env,
    MALLOC_MMAP_THRESHOLD_: String(128 * 1024),
  });
}

// Node's compile cache: V8's compiled code of every module (node_modules and dist/) kept on disk, so a command that
// loads the same files again skips most of their compilation (~0.3 CPU-s of a role's boot, measured
// with serve --role). Its directory is NODE_COMPILE_CACHE, else node-compile-cache in the OS temp directory;
// NODE_DISABLE_COMPILE_CACHE=1 turns it off. A cache that cannot be written or read only costs that time again: Node
// neither throws nor fails the load. Set in the environment too, so the SMTP role's processing threads and the
// watchdog use the same cache. (The default import: an older Node, which has no such export, must still reach the
// version check above.)
const compileCache = nodeModule.enableCompileCache();
if (compileCache.directory !== undefined) process.env.NODE_COMPILE_CACHE = compileCache.directory;

// The build in dist/ when it is there and newer than the sources; a checkout whose build is older runs the sources
// through tsx instead (correct, only slower to start).
const { buildIsFresh, hasSources } = await import("./build.js");
let main;
if (!hasSources() || buildIsFresh()) {
  ({ main } = await import("../../dist/src/cli/main.js"));
} else {
  process.stderr.write("mailbox: dist/ is older than the sources or absent, running them through tsx (`npm run build` makes commands start fast)\n");
  const { register } = await import("tsx/esm/api");
  register();
  ({ main } = await import("./main.ts"));
}
const code = await main(process.argv.slice(2));
// Exit explicitly: idle pool timers and sockets must not keep a finished command alive.
process.exit(code);
