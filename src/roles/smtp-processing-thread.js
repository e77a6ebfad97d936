// The processing thread's entry (see src/inbound/processing.ts): module loader hooks are per thread, so tsx is
// registered here as the `mailbox` bin does for the main thread, and then the TypeScript thread body is loaded.
import { register } from "tsx/esm/api";

register();
await import("./smtp-processing-thread.ts");
