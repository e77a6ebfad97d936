// A loopback TCP proxy in front of PostgreSQL that counts the bytes the server sends: point a test app's
// DATABASE_URL at it to see how much data a request made the app read, whatever ORM or driver read it. It can also
// play a database that went away: cut every connection and refuse new ones until it is resumed.
import { createConnection, createServer, type Server, type Socket } from "node:net";

export interface CountingProxy {
  /** The database URL with the proxy's address in place of the server's. */
  readonly url: string;
  /** Bytes sent by PostgreSQL to every client of the proxy so far. */
  readonly bytesFromServer: number;
  /** Cuts every open connection and refuses new ones, as a PostgreSQL that is restarting. */
  interrupt(): void;
  /** Accepts connections again. */
  resume(): void;
  stop(): Promise<void>;
}

export async function startCountingProxy(databaseUrl: string): Promise<CountingProxy> {
  const target = new URL(databaseUrl);
  const sockets = new Set<Socket>();
  let bytesFromServer = 0;
  let refusing = false;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
  };
  const server: Server = createServer((client) => {
    if (refusing) return void client.destroy();
    const upstream = createConnection({ host: target.hostname, port: Number(target.port) });
    track(client);
    track(upstream);
    upstream.on("data", (chunk: Buffer) => (bytesFromServer += chunk.length));
    client.pipe(upstream);
    upstream.pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the proxy has no TCP address");
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String(address.port);
  return {
    url: url.toString(),
    get bytesFromServer() {
      return bytesFromServer;
    },
    interrupt() {
      refusing = true;
      for (const s of sockets) s.destroy();
    },
    resume() {
      refusing = false;
    },
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
