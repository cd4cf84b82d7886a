/**
 * A TCP proxy that holds each new connection for `delayMs` before it forwards a byte, as a
 * Valkey that is slow to answer (a loaded node, a cold connection through a mesh) looks to
 * a client that has just connected.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface SlowProxy {
  readonly url: string;
  close(): Promise<void>;
}

export async function slowProxy(targetPort: number, delayMs: number): Promise<SlowProxy> {
  const open = new Set<Socket>();
  const server = createServer((client) => {
    open.add(client);
    client.pause();
    client.on('error', () => client.destroy()).on('close', () => open.delete(client));
    setTimeout(() => {
      if (client.destroyed) return;
      const upstream = connect(targetPort, '127.0.0.1');
      open.add(upstream);
      upstream.on('error', () => client.destroy()).on('close', () => client.destroy());
      client.on('close', () => upstream.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    }, delayMs).unref();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${(server.address() as { port: number }).port}`,
    async close() {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
