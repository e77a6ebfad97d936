// The binary PROXY protocol header (version 2, haproxy's proxy-protocol.txt §2.2), which AWS Network Load Balancers
// send; smtp-server reads only the text form (version 1). Read before the SMTP session starts, from a trusted load
// balancer's connection: its client address and port, or the connection's own for a LOCAL header (the balancer's
// health check). What follows the header stays on the socket for the session.
import { randomBytes } from "node:crypto";
import type { Socket } from "node:net";

const SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
/** Signature, version and command, family and transport, length. */
const FIXED_BYTES = 16;
/** Addresses and TLVs (AWS adds a VPC endpoint id): a few hundred bytes; more is no load balancer of ours. */
const MAX_BODY_BYTES = 2048;

export type ProxyHeader =
  /** A version 1 header (or none): its bytes are back on the socket for smtp-server to read. */
  | { readonly kind: "text" }
  /** A version 2 header: the client it names (undefined for LOCAL or an unspecified family: the connection's own). */
  | { readonly kind: "binary"; readonly remoteAddress: string | undefined; readonly remotePort: number | undefined };

/**
 * Reads a version 2 header from the start of `socket`, or finds none there (the bytes read are put back). `done`
 * gets an error for a malformed header or a connection that ends first; the socket is then destroyed.
 */
export function readProxyHeader(socket: Socket, done: (err: Error | null, header?: ProxyHeader) => void): void {
  let held = Buffer.alloc(0);
  let finished = false;
  const finish = (err: Error | null, header?: ProxyHeader, rest?: Buffer) => {
    if (finished) return;
    finished = true;
    socket.off("readable", read).off("error", failed).off("end", ended).off("close", ended);
    if (err) {
      socket.on("error", () => undefined);
      socket.destroy();
    } else if (rest && rest.length > 0) socket.unshift(rest);
    done(err, header);
  };
  const failed = (e: Error) => finish(e);
  const ended = () => finish(new Error("the connection ended before its PROXY header"));
  function read(): void {
    let chunk: Buffer | null;
    while (!finished && (chunk = socket.read() as Buffer | null) !== null) {
      held = Buffer.concat([held, chunk]);
      if (held[0] !== SIGNATURE[0]) return finish(null, { kind: "text" }, held);
      if (held.length < FIXED_BYTES) continue;
      if (!held.subarray(0, SIGNATURE.length).equals(SIGNATURE) || held[12]! >> 4 !== 2) return finish(new Error("invalid PROXY protocol header"));
      const length = held.readUInt16BE(14);
      if (length > MAX_BODY_BYTES) return finish(new Error("PROXY protocol header too long"));
      if (held.length < FIXED_BYTES + length) continue;
      const header = parse(held[12]! & 0x0f, held[13]!, held.subarray(FIXED_BYTES, FIXED_BYTES + length));
      if (!header) return finish(new Error("invalid PROXY protocol header"));
      return finish(null, header, held.subarray(FIXED_BYTES + length));
    }
  }
  socket.on("readable", read).on("error", failed).on("end", ended).on("close", ended);
}

/** The addresses of a PROXY (1) header of TCP over IPv4 or IPv6; LOCAL (0) and other families name no client. */
function parse(command: number, familyAndTransport: number, body: Buffer): ProxyHeader | undefined {
  if (command === 0) return { kind: "binary", remoteAddress: undefined, remotePort: undefined };
  if (command !== 1) return undefined;
  if (familyAndTransport === 0x11 && body.length >= 12) {
    return { kind: "binary", remoteAddress: [...body.subarray(0, 4)].join("."), remotePort: body.readUInt16BE(8) };
  }
  if (familyAndTransport === 0x21 && body.length >= 36) {
    // Written out in full: smtp-server writes every address it is given in its shortest form.
    const groups = Array.from({ length: 8 }, (_, i) => body.readUInt16BE(i * 2).toString(16));
    return { kind: "binary", remoteAddress: groups.join(":"), remotePort: body.readUInt16BE(32) };
  }
  // UNSPEC, UDP or a Unix socket: the connection's own address.
  return { kind: "binary", remoteAddress: undefined, remotePort: undefined };
}

/** A session id as smtp-server makes them (16 base-32 digits of 80 random bits). */
export function sessionId(): string {
  return BigInt(`0x${randomBytes(10).toString("hex")}`)
    .toString(32)
    .padStart(16, "0");
}
