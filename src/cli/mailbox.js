#!/usr/bin/env node
// The `mailbox` bin: runs the TypeScript CLI through tsx, so no build step stands between a clone and a run.
import { register } from "tsx/esm/api";

register();
const { main } = await import("./main.ts");
const code = await main(process.argv.slice(2));
// Exit explicitly: idle pool timers and sockets must not keep a finished command alive.
process.exit(code);
