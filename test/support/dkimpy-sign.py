# Signs messages with dkimpy, an implementation independent of the one under test, for the authentication tests:
# DKIM signatures (RFC 6376, RFC 8463 Ed25519) and ARC sets (RFC 8617). Reads a JSON list of jobs on stdin and
# writes a JSON list of the header fields each job made, in order.
#
#   {"op": "sign", "message": <base64>, "domain": "...", "selector": "...", "key": "<PEM, or base64 Ed25519 seed>",
#    "algorithm": "rsa-sha256" | "ed25519-sha256", "canonicalize": ["relaxed", "simple"], "length": false}
#     -> {"headers": "DKIM-Signature: ...\r\n"}
#   {"op": "arc_sign", "message": <base64>, "domain": "...", "selector": "...", "key": "<PEM>", "srv_id": "..."}
#     -> {"headers": "ARC-Seal: ...\r\nARC-Message-Signature: ...\r\nARC-Authentication-Results: ...\r\n"}
import base64
import json
import sys

import dkim


def run(job):
    message = base64.b64decode(job["message"])
    domain = job["domain"].encode()
    selector = job["selector"].encode()
    key = job["key"].encode()
    if job["op"] == "sign":
        header = dkim.sign(
            message,
            selector,
            domain,
            key,
            signature_algorithm=job.get("algorithm", "rsa-sha256").encode(),
            canonicalize=tuple(c.encode() for c in job.get("canonicalize", ["relaxed", "simple"])),
            length=job.get("length", False),
        )
        return {"headers": header.decode()}
    if job["op"] == "arc_sign":
        headers = dkim.arc_sign(message, selector, domain, key, job["srv_id"].encode())
        return {"headers": b"".join(headers).decode()}
    raise ValueError("unknown op %r" % job["op"])


json.dump([run(job) for job in json.load(sys.stdin)], sys.stdout)
