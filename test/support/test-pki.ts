// A throwaway certificate authority made with openssl for one test file: a CA, and server and client certificates
// it signs (the server's for the names given), as PEM files in a temporary directory.
import { execFile } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface Issued {
  readonly cert: string;
  readonly key: string;
}

export interface TestCa {
  /** Path of the CA's PEM certificate. */
  readonly ca: string;
  /** A server certificate for `names` (DNS names or IP addresses). */
  server(names: string[]): Promise<Issued>;
  /** A client certificate (clientAuth) with common name `name`. */
  client(name: string): Promise<Issued>;
}

export async function createTestCa(name = "test ca"): Promise<TestCa> {
  const dir = await mkdtemp(join(tmpdir(), "mailbox-pki-"));
  const ca = join(dir, "ca.pem");
  const caKey = join(dir, "ca-key.pem");
  await run("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", `/CN=${name}`, "-keyout", caKey, "-out", ca]);
  let serial = 0;
  async function issue(cn: string, extensions: string): Promise<Issued> {
    const base = join(dir, `${++serial}`);
    const [key, csr, cert, ext] = [`${base}-key.pem`, `${base}.csr`, `${base}.pem`, `${base}.ext`];
    await writeFile(ext, extensions);
    await run("openssl", ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", `/CN=${cn}`, "-keyout", key, "-out", csr]);
    await run("openssl", ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", cert]);
    return { cert, key };
  }
  return {
    ca,
    server: (names) =>
      issue(names[0]!, `subjectAltName=${names.map((n) => (/^[\d.]+$/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(",")}\nextendedKeyUsage=serverAuth\n`),
    client: (cn) => issue(cn, "extendedKeyUsage=clientAuth\n"),
  };
}
