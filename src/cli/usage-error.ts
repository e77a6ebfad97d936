/** A command line that names no command, or a flag missing or malformed: said with the usage, exit code 2. */
export class UsageError extends Error {}
