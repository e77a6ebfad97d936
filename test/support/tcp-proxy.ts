// A loopback TCP proxy to one target, for tests that cut a process off from a server it depends on (a network
// partition) without touching the server: freeze() stops forwarding in both directions on every connection, open
// or new, so the client's calls hang as they do behind a dead link; thaw() lets everything through again.
import net from "node:net";

export interface TcpProxy {
  /** host:port to give the client instead of the target's. */
  readonly address: string;
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  let frozen = false;
  const hold = (pair: { client: net.Socket; upstream: net.Socket }) => {
    pair.client.pause();
    pair.upstream.pause();
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    const pair = { client, upstream };
    pairs.add(pair);
    // Forwarded by hand rather than piped: a pipe resumes a paused source on its destination's drain.
    client.on("data", (d: Buffer) => upstream.write(d));
    upstream.on("data", (d: Buffer) => client.write(d));
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
    if (frozen) hold(pair);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    freeze() {
      frozen = true;
      for (const pair of pairs) hold(pair);
    },
    thaw() {
      frozen = false;
      for (const pair of pairs) {
        pair.client.resume();
        pair.upstream.resume();
      }
    },
    close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream.destroy();
      }
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
