import { once } from 'node:events';
import { createServer } from 'node:net';

/** A TCP port free on loopback now (for a server started by another process). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}
