// Independent implementations the sender authentication is checked against, installed into the tools directory
// (src/runtime/tools-dir.ts) on first use from PyPI (as tools.ts installs helm and hadolint): dkimpy signs DKIM (RSA
// and, with PyNaCl, Ed25519) and ARC (with authres), and pyspf's source distribution carries the RFC 7208 SPF test
// suite (test/rfc7208-tests.yml), taken from there at install time and never kept in this repository.
import { execFile, spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { ensureTool } from "../../src/runtime/tool-install.js";
import { toolsDir } from "../../src/runtime/tools-dir.js";

const run = promisify(execFile);

const PACKAGES = ["dkimpy==1.1.8", "pynacl==1.6.2", "authres==1.2.0", "dnspython==2.9.2"];
const PYSPF = "pyspf==2.0.14";
const TOOL = "mail-authentication-dkimpy-1.1.8-pyspf-2.0.14";
const SPF_SUITE = "rfc7208-tests.yml";

/** The python of a virtual environment with dkimpy, and the path of the RFC 7208 test suite beside it. */
export async function ensureInteropTools(): Promise<{ readonly python: string; readonly spfSuite: string }> {
  const python = await ensureTool(toolsDir(), TOOL, "bin/python", async (staging) => {
    await run("python3", ["-m", "venv", staging]).catch((e: NodeJS.ErrnoException & { stderr?: string }) => {
      if (e.code === "ENOENT") throw new Error("the authentication interop tests need python3 (with venv and pip) on PATH");
      throw new Error(`python3 -m venv failed:\n${e.stderr ?? e.message}`);
    });
    const pip = [join(staging, "bin", "python"), "-m", "pip", "--disable-pip-version-check", "--quiet"] as const;
    await run(pip[0], [...pip.slice(1), "install", ...PACKAGES], { maxBuffer: 16 * 1024 * 1024 });
    // The suite is in the source distribution only; the wheel has no tests.
    await run(pip[0], [...pip.slice(1), "download", "--no-deps", "--no-binary", ":all:", "--dest", join(staging, "sdist"), PYSPF], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const version = PYSPF.split("==")[1]!;
    await run("tar", ["-xzf", join(staging, "sdist", `pyspf-${version}.tar.gz`), "-C", staging, "--strip-components=2", `pyspf-${version}/test/${SPF_SUITE}`]);
  });
  return { python, spfSuite: join(python, "..", "..", SPF_SUITE) };
}

export type DkimpyJob =
  | {
      readonly op: "sign";
      readonly message: Buffer;
      readonly domain: string;
      readonly selector: string;
      /** PEM (RSA), or the base64 32-byte seed (Ed25519), as dkimpy takes them. */
      readonly key: string;
      readonly algorithm?: "rsa-sha256" | "ed25519-sha256";
      readonly canonicalize?: readonly ["relaxed" | "simple", "relaxed" | "simple"];
      readonly length?: boolean;
    }
  | { readonly op: "arc_sign"; readonly message: Buffer; readonly domain: string; readonly selector: string; readonly key: string; readonly srvId: string };

/** Runs dkimpy over the jobs in one python process; each answer is the header fields the job made (CRLF-ended). */
export async function dkimpy(jobs: readonly DkimpyJob[]): Promise<string[]> {
  const { python } = await ensureInteropTools();
  const script = new URL("./dkimpy-sign.py", import.meta.url).pathname;
  const input = JSON.stringify(
    jobs.map(({ message, ...job }) => ({ ...job, message: message.toString("base64"), ...("srvId" in job ? { srv_id: job.srvId } : {}) })),
  );
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(python, [script], { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(stdout) : reject(new Error(`dkimpy-sign.py exited ${code}:\n${stderr}`))));
    child.stdin.end(input);
  });
  return (JSON.parse(output) as { headers: string }[]).map((r) => r.headers);
}

/** The scenarios of the RFC 7208 test suite: YAML documents of tests and the zone data they run against. */
export async function spfSuiteText(): Promise<string> {
  return readFile((await ensureInteropTools()).spfSuite, "utf8");
}
