import { once } from "node:events";
import { createServer, type AddressInfo } from "node:net";

/** A loopback port free right now (the OS picks it); the caller binds it soon after. */
export async function findFreePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, "close");
  return port;
}

/** Whether a loopback port can be bound right now. */
export async function isPortFree(port: number): Promise<boolean> {
  const server = createServer();
  const bound = await new Promise<boolean>((resolve) => {
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => resolve(true));
  });
  if (bound) {
    server.close();
    await once(server, "close");
  }
  return bound;
}
