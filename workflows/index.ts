// Everything bundled into the Temporal workflow sandbox. Only deterministic code belongs under workflows/.
export { inboxPurge } from "./inbox-purge.js";
