/**
 * The real `sops` CLI, so that tests check our SOPS files against sops itself
 * rather than against our own reading of its format.
 *
 * Built once from its Go module (the module proxy is the only network the tests
 * use) into the project's binary cache, `<cacheRoot>/bin/sops-<version>/sops`, the
 * way packages/controlplane builds helm: into a temporary folder first and renamed
 * into place when complete, so an interrupted build never looks cached, under a
 * lock so that parallel test processes build it once. A cold build downloads sops'
 * module graph and compiles it: minutes, once per machine and version.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type GoTool, goToolBinary } from '@operators/controlplane';

/** The sops release the tests hold our files to. Its cache folder is per version, so a bump rebuilds. */
export const SOPS_VERSION = 'v3.13.3';
export type Log = (message: string) => void;

function defaultLog(message: string): void {
  process.stderr.write(`[sops] ${message}\n`);
}

/** sops as a Go tool. */
export const SOPS_TOOL: GoTool = {
  name: 'sops',
  version: SOPS_VERSION,
  pkg: 'github.com/getsops/sops/v3/cmd/sops',
  versionArgs: ['--version', '--disable-version-check'],
  versionMatches: (stdout) => stdout.includes(SOPS_VERSION.replace(/^v/, '')),
};

/** The path of the sops binary, building it first if the cache does not hold it. */
export function sopsBinary(log: Log = defaultLog): Promise<string> {
  return goToolBinary(SOPS_TOOL, log);
}

export interface SopsRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs sops in an empty folder with an empty HOME, so that no `.sops.yaml` and no
 * age key file of the machine takes part: only the identity given (as
 * SOPS_AGE_KEY) can decrypt. Resolves with the exit code; never rejects on one.
 */
export async function runSops(
  bin: string,
  args: readonly string[],
  opts: { readonly ageKey?: string; readonly files?: Readonly<Record<string, string>> } = {},
): Promise<SopsRun> {
  const dir = await mkdtemp(join(tmpdir(), 'sops-test-'));
  for (const [name, text] of Object.entries(opts.files ?? {})) await writeFile(join(dir, name), text);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    XDG_CONFIG_HOME: join(dir, '.config'),
    SOPS_DISABLE_VERSION_CHECK: 'true',
  };
  if (opts.ageKey !== undefined) env.SOPS_AGE_KEY = opts.ageKey;
  try {
    return await new Promise((resolve, reject) => {
      execFile(bin, args, { cwd: dir, env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') return reject(err);
        resolve({ code: err ? Number(err.code) : 0, stdout, stderr });
      });
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
