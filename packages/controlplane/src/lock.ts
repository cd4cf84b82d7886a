/**
 * A cross-process lock on a folder, so that two test runs never build the same
 * binary at once. `mkdir` is atomic; the holder's pid is written inside so a lock
 * left by a killed process is recognised as stale and taken over, never waited on
 * forever.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function withLock<T>(path: string, log: (m: string) => void, fn: () => Promise<T>): Promise<T> {
  await mkdir(dirname(path), { recursive: true });
  let announced = false;
  for (;;) {
    try {
      await mkdir(path);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number.parseInt(await readFile(join(path, 'pid'), 'utf8').catch(() => ''), 10);
      if (Number.isFinite(pid) && !isAlive(pid)) {
        await rm(path, { recursive: true, force: true });
        continue;
      }
      if (!announced) {
        log(`waiting for another process (pid ${pid || '?'}) that holds ${path}`);
        announced = true;
      }
      await sleep(1000);
    }
  }
  await writeFile(join(path, 'pid'), String(process.pid));
  try {
    return await fn();
  } finally {
    await rm(path, { recursive: true, force: true });
  }
}
