/**
 * A command-line tool built from its Go module into the project's binary cache, for
 * tests that check our output against the real tool (sops, OPA): `<cacheRoot>/bin/
 * <name>-<version>/<name>`. Built into a temporary folder first and renamed into place
 * when complete, so an interrupted build never looks cached, and under a lock so that
 * parallel test processes build it once. `go install pkg@version` with no go.mod around
 * resolves the module's own requirements; the module proxy is the only network it uses.
 */
import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { cacheRoot } from './binaries.ts';
import { runGo } from './go.ts';
import { withLock } from './lock.ts';

const exec = promisify(execFile);

export interface GoTool {
  /** The binary's name, also the cache folder's prefix. */
  readonly name: string;
  /** The module version (`v1.22.3`); its cache folder is per version, so a bump rebuilds. */
  readonly version: string;
  /** The Go package of the command (`github.com/getsops/sops/v3/cmd/sops`). */
  readonly pkg: string;
  /** How to ask the built binary for its version. */
  readonly versionArgs: readonly string[];
  /** Whether that answer names `version`: a build that reports another version is refused. */
  readonly versionMatches: (stdout: string) => boolean;
}

export type ToolLog = (message: string) => void;

/** The path of the tool's binary, building it first (minutes, once per machine and version) if the cache lacks it. */
export async function goToolBinary(tool: GoTool, log: ToolLog): Promise<string> {
  const bin = join(cacheRoot(), 'bin', `${tool.name}-${tool.version}`, tool.name);
  if (await isExecutable(bin)) return bin;
  await withLock(join(cacheRoot(), 'locks', `${tool.name}-${tool.version}`), log, async () => {
    if (!(await isExecutable(bin))) await build(tool, dirname(bin), log);
  });
  return bin;
}

async function build(tool: GoTool, dest: string, log: ToolLog): Promise<void> {
  const what = `${tool.name} ${tool.version}`;
  log(`building ${what} with Go into ${dest} (a few minutes the first time)`);
  const started = Date.now();
  const out = join(cacheRoot(), 'build', `${tool.name}-${tool.version}`, 'out');
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  let compiled = 0;
  const progress = setInterval(() => {
    log(
      `building ${tool.name}: ${Math.round((Date.now() - started) / 1000)} s, ${compiled} packages compiled so far`,
    );
  }, 30_000);
  try {
    await runGo(['install', '-v', '-trimpath', '-ldflags', '-s -w', `${tool.pkg}@${tool.version}`], {
      cwd: tmpdir(),
      // Static binaries: nothing of the machine's C libraries is needed at run time.
      env: { CGO_ENABLED: '0', GOBIN: out },
      purpose: `building ${what}`,
      onLine: () => {
        compiled++;
      },
    });
  } finally {
    clearInterval(progress);
  }
  const built = join(out, tool.name);
  const { stdout } = await exec(built, [...tool.versionArgs]);
  if (!tool.versionMatches(stdout))
    throw new Error(`the ${tool.name} just built reports "${stdout.trim()}", not ${tool.version}`);
  await mkdir(dest, { recursive: true });
  await rename(built, join(dest, tool.name));
  log(`${what} built in ${Math.round((Date.now() - started) / 1000)} s`);
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
