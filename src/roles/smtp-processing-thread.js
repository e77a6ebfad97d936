// The processing thread's entry when the smtp role runs from the sources (tests, tsx; see src/inbound/processing.ts).
// With a build in dist/ newer than the sources, the thread runs the build's copy of its body: the same code,
// compiled once by `npm run build` instead of transpiled by tsx in every thread (about 1 CPU-second less per thread
// start, which every test that starts an smtp role pays). Otherwise tsx is registered here, as the `mailbox` bin does
// for the main thread (module loader hooks are per thread), and then the TypeScript body is loaded.
import { buildIsFresh } from "../cli/build.js";

if (buildIsFresh()) {
  await import("../../dist/src/roles/smtp-processing-thread.js");
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("./smtp-processing-thread.ts");
}
