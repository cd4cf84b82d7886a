/**
 * A layer as an uncompressed tar of a folder, byte for byte the same from the same files:
 * entries sorted by name, every time set to `SOURCE_DATE_EPOCH` (0 by default), owner and
 * group root by number, no access or change times. Two builds of the same sources give
 * layers of the same digest, so a registry stores a shared layer once and a rebuild that
 * changed nothing pushes nothing.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

/** The build's timestamp: `SOURCE_DATE_EPOCH` when set (reproducible-builds.org), else 0. */
export function sourceDateEpoch(): number {
  const raw = process.env.SOURCE_DATE_EPOCH;
  const n = raw === undefined ? 0 : Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`SOURCE_DATE_EPOCH=${raw}: not a number of seconds`);
  return n;
}

/** Writes the tar of `dir`'s content (paths relative to it, as `./x`) to `out`. */
export async function tarFolder(dir: string, out: string): Promise<void> {
  await execFileP(
    'tar',
    [
      '--create',
      `--file=${out}`,
      `--directory=${dir}`,
      '--sort=name',
      `--mtime=@${sourceDateEpoch()}`,
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      '--format=posix',
      '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime',
      '.',
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
}
