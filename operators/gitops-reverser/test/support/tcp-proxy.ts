/**
 * A TCP proxy in front of an apiserver whose traffic can be held: `hold()` drops every
 * open connection and parks new ones (no bytes either way) until `release()`, as a
 * network partition would. A watch that comes back after a hold resumes from the
 * resourceVersion it last saw, which is how a test meets a 410 after compaction.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface HoldableProxy {
  readonly port: number;
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

export async function holdableProxy(target: URL): Promise<HoldableProxy> {
  const open = new Set<Socket>();
  const parked: Socket[] = [];
  let held = false;
  const pipe = (client: Socket): void => {
    const upstream = connect(Number(target.port), target.hostname);
    open.add(client).add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = (): void => {
      open.delete(client);
      open.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  };
  const server = createServer((client) => {
    if (held) {
      client.pause();
      client.on('error', () => client.destroy());
      parked.push(client);
    } else pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    hold() {
      held = true;
      for (const s of open) s.destroy();
      open.clear();
    },
    release() {
      held = false;
      for (const c of parked.splice(0)) {
        if (c.destroyed) continue;
        c.resume();
        pipe(c);
      }
    },
    async close() {
      for (const s of [...open, ...parked]) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
