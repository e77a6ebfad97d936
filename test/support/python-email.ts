// Messages as a real mail client reads them: Python's `email` package (the standard library's RFC 5322 and MIME
// parser, with its modern policy) parses the bytes and gives back each part's type, disposition, filename, Content-ID
// and decoded bytes' hash, the headers and the To and Cc addresses.
import { execFileSync } from "node:child_process";

/** Walks the parsed message: each part's content type, disposition, filename, Content-ID and decoded bytes' hash. */
const PYTHON = String.raw`
import email, email.policy, hashlib, json, sys
msg = email.message_from_bytes(sys.stdin.buffer.read(), policy=email.policy.default)
def walk(part):
    out = {"type": part.get_content_type(), "disposition": part.get_content_disposition(),
           "filename": part.get_filename(), "cid": part["Content-ID"]}
    if part.get_content_type() == "message/rfc822":
        inner = part.get_payload()[0]
        out["inner"] = {"subject": inner["Subject"]}
        if inner.is_multipart():
            out["inner"]["tree"] = walk(inner)
        else:
            out["inner"]["body"] = inner.get_content().replace("\r\n", "\n")
    elif part.is_multipart():
        out["parts"] = [walk(p) for p in part.iter_parts()]
    else:
        data = part.get_payload(decode=True)
        out["sha256"] = hashlib.sha256(data).hexdigest()
        out["size"] = len(data)
    return out
headers = {k: str(v) for k, v in msg.items()}
to = [a.addr_spec for a in msg["To"].addresses] if msg["To"] else []
cc = [(a.display_name, a.addr_spec) for a in msg["Cc"].addresses] if msg["Cc"] else []
print(json.dumps({"headers": headers, "to": to, "cc": cc, "tree": walk(msg), "defects": [str(d) for p in msg.walk() for d in p.defects]}))
`;

export interface Part {
  type: string;
  disposition: string | null;
  filename: string | null;
  cid: string | null;
  parts?: Part[];
  sha256?: string;
  size?: number;
  inner?: { subject: string; body?: string; tree?: Part };
}

export interface Parsed {
  headers: Record<string, string>;
  to: string[];
  cc: [string, string][];
  tree: Part;
  defects: string[];
}

export function parseWithPython(mime: Buffer): Parsed {
  return JSON.parse(execFileSync("python3", ["-c", PYTHON], { input: mime, timeout: 30_000 }).toString("utf8")) as Parsed;
}
