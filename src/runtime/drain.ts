// SIGTERM's budget (SHUTDOWN_TIMEOUT_MS): what is in flight — API requests, SMTP transactions, activities — gets
// half of it; the rest is for telling late SMTP sessions 421, closing pools and connections. Past the whole of it
// the process exits anyway (src/cli/main.ts).
export function drainGraceMs(shutdownTimeoutMs: number): number {
  return Math.floor(shutdownTimeoutMs / 2);
}
