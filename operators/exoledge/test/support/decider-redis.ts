/**
 * A real redis-server for the decider's tests: Debian's, installed on the fly when the
 * tests run as root (`ensureDebianPackages`), on 127.0.0.1 and a free port, with its
 * files in a temp folder and persistence off. It can be killed (SIGKILL, as an OOM kill
 * or a node loss would) and started again on the same port.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureDebianPackages, freePort } from '@operators/controlplane/testing';

const REDIS_SERVER = '/usr/bin/redis-server';

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** SIGKILL: the server is gone, connections reset. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty: persistence is off); nothing if it runs. */
  restart(): Promise<void>;
  /** Kills it and removes its folder. */
  stop(): Promise<void>;
}

/** Resolves once a PING on `port` is answered with PONG, or fails after `timeoutMs`. */
async function waitForPong(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pong = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ port, host: '127.0.0.1' });
      socket.setTimeout(500);
      let answer = '';
      socket.on('connect', () => socket.write('PING\r\n'));
      socket.on('data', (d) => {
        answer += d.toString();
        if (answer.includes('\r\n')) {
          socket.destroy();
          resolve(answer.startsWith('+PONG'));
        }
      });
      socket.on('error', () => resolve(false));
      socket.on('timeout', () => {
        socket.destroy();
        resolve(false);
      });
    });
    if (pong) return;
    if (Date.now() > deadline)
      throw new Error(`redis-server on port ${port} did not answer PING in ${timeoutMs} ms`);
    await sleep(50);
  }
}

export async function startRedis(): Promise<RedisServer> {
  await ensureDebianPackages(['redis-server']);
  const dir = await mkdtemp(join(tmpdir(), 'exoledge-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  let output = '';
  const running = (): boolean => child !== undefined && child.exitCode === null && child.signalCode === null;
  const launch = async (): Promise<void> => {
    if (running()) return;
    output = '';
    const proc = spawn(
      REDIS_SERVER,
      ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    proc.stdout?.on('data', (d) => {
      output += d.toString();
    });
    proc.stderr?.on('data', (d) => {
      output += d.toString();
    });
    child = proc;
    try {
      await waitForPong(port);
    } catch (err) {
      proc.kill('SIGKILL');
      throw new Error(`${(err as Error).message}\n${output}`);
    }
  };
  const kill = async (): Promise<void> => {
    if (!running()) return;
    const proc = child!;
    child = undefined;
    const exited = once(proc, 'exit');
    proc.kill('SIGKILL');
    await exited;
  };
  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill,
    restart: launch,
    async stop() {
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
