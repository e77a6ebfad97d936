#!/usr/bin/env node
// The `mailbox` bin: runs the TypeScript CLI through tsx, so no build step stands between a clone and a run.
import { register } from "tsx/esm/api";

register();
const { main } = await import("./main.ts");
process.exitCode = await main(process.argv.slice(2));
