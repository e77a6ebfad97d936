// Installing a Debian package the tests or the benchmarks need (clamav-daemon, postfix) on a machine that lacks it,
// so a fresh machine runs them with one command. Root only, as in CI and the benchmark machines.
//
// A package's maintainer scripts would start its services with the system configuration (clamd with freshclam,
// which downloads signatures; Postfix as the machine's MTA). Debian's policy-rc.d (exit 101) stops maintainer
// scripts from starting services: container images ship one, a machine without it gets one for the duration of
// the install. Questions the package asks are answered beforehand through debconf, never on a terminal.
import { execFile } from "node:child_process";
import { access, rm, writeFile } from "node:fs/promises";

const POLICY_RC_PATH = "/usr/sbin/policy-rc.d";
/** How long apt-get waits for another install (another test run's, another engineer's) to release dpkg's lock. */
const DPKG_LOCK_TIMEOUT_S = 300;

export interface DebianPackage {
  /** The package's name, e.g. `postfix`. */
  readonly name: string;
  /** Files the package installs that the caller needs: when all exist, nothing is installed. */
  readonly files: readonly string[];
  /** debconf selections answered before the install (`<package> <question> <type> <value>`). */
  readonly preseed?: readonly string[];
}

/** Installs the package unless its files are there, with its services held back; throws what apt-get said. */
export async function ensureDebianPackage(pkg: DebianPackage, log: (line: string) => void = () => undefined): Promise<void> {
  if (await allExist(pkg.files)) return;
  if (process.getuid?.() !== 0) throw new Error(`${pkg.files.join(", ")} missing: install the Debian package ${pkg.name}`);
  log(`installing the Debian package ${pkg.name} with apt-get`);
  if (pkg.preseed && pkg.preseed.length > 0) await run("debconf-set-selections", [], `${pkg.preseed.join("\n")}\n`);
  await withServicesHeldBack(pkg.name, async () => {
    const install = () => apt("install", "-y", "--no-install-recommends", pkg.name);
    try {
      await install();
    } catch {
      // A fresh machine may have no package lists yet.
      await apt("update");
      await install();
    }
  });
  if (!(await allExist(pkg.files))) throw new Error(`the Debian package ${pkg.name} installed, but ${pkg.files.join(", ")} are still missing`);
}

async function withServicesHeldBack(name: string, install: () => Promise<void>): Promise<void> {
  if (await exists(POLICY_RC_PATH)) return install();
  await writeFile(POLICY_RC_PATH, `#!/bin/sh\n# held back while ${name} is installed for the tests or benchmarks\nexit 101\n`, { mode: 0o755 });
  try {
    await install();
  } finally {
    await rm(POLICY_RC_PATH, { force: true });
  }
}

function apt(...args: string[]): Promise<void> {
  return run("apt-get", ["-o", `DPkg::Lock::Timeout=${DPKG_LOCK_TIMEOUT_S}`, ...args]);
}

async function run(command: string, args: readonly string[], input?: string): Promise<void> {
  try {
    await new Promise<void>((resolve, reject) => {
      const child = execFile(
        command,
        args,
        { env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" }, maxBuffer: 16 * 1024 * 1024 },
        (error, _stdout, stderr) => (error ? reject(Object.assign(error, { stderr })) : resolve()),
      );
      child.stdin?.end(input ?? "");
    });
  } catch (e) {
    const { stderr } = e as { stderr?: string };
    throw new Error(`${command} ${args.join(" ")} failed: ${stderr?.trim().split("\n").slice(-5).join("\n") || String(e)}`, { cause: e });
  }
}

async function allExist(paths: readonly string[]): Promise<boolean> {
  return (await Promise.all(paths.map(exists))).every(Boolean);
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
