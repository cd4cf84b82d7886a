/**
 * Command-line tools built from their Go module into the project's binary cache: for tests
 * that check our output against the real tool (sops, OPA, the registry), and for the node's
 * runtime (containerd, the CNI plugins, CoreDNS). A tool is one module at one version and
 * one or more of its commands, installed by a single `go install a@v b@v …` so they share
 * its compiled packages, into `<cacheRoot>/bin/<name>-<version>/`. Built into a temporary
 * folder first and renamed into place when every command is built and reports its version,
 * so an interrupted build never looks cached, and under a lock so that parallel test
 * processes build it once. `go install pkg@version` with no go.mod around resolves the
 * module's own requirements; the module proxy is the only network it uses.
 */
import { execFile } from 'node:child_process';
import { mkdir, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cacheRoot } from './binaries.ts';
import { isExecutable } from './executable.ts';
import { runGo } from './go.ts';
import { withLock } from './lock.ts';

const exec = promisify(execFile);

/** One command of a module: the binary `go install` writes, and how to ask it its version. */
export interface GoCommand {
  /** The binary's name: the last element of `pkg`, as `go install` names it. */
  readonly name: string;
  /** The Go package of the command (`github.com/getsops/sops/v3/cmd/sops`). */
  readonly pkg: string;
  /** How to ask the built binary for its version. */
  readonly versionArgs: readonly string[];
  /** Environment the version question needs (a CNI plugin prints its version with CNI_COMMAND empty). */
  readonly versionEnv?: Readonly<Record<string, string>>;
  /**
   * Whether that answer names the version: a build that reports another version is
   * refused. Some commands answer on stderr (the CNI plugins' "about" line).
   */
  readonly versionMatches: (stdout: string, stderr: string) => boolean;
}

/** Linker flags besides `-s -w`, such as the `-X` a release build sets its version with. */
interface LinkerFlags {
  readonly ldflags?: readonly string[];
}

/** A tool of one command, named as its binary: sops, OPA, the registry. */
export interface GoTool extends GoCommand, LinkerFlags {
  /** The module version (`v1.22.3`); its cache folder is per version, so a bump rebuilds. */
  readonly version: string;
}

/** Several commands of one module and version, built together into one folder. */
export interface GoModuleTool extends LinkerFlags {
  /** The cache folder's prefix (`containerd`, `cni-plugins`). */
  readonly name: string;
  readonly version: string;
  readonly commands: readonly GoCommand[];
}

export type ToolLog = (message: string) => void;

/** The path of the tool's binary, building it first (minutes, once per machine and version) if the cache lacks it. */
export async function goToolBinary(tool: GoTool, log: ToolLog): Promise<string> {
  const { version, ldflags, ...command } = tool;
  const dir = await goModuleTool(
    { name: tool.name, version, commands: [command], ...(ldflags ? { ldflags } : {}) },
    log,
  );
  return join(dir, tool.name);
}

/**
 * The cache folder holding every command of `tool`, building them first (one `go install`)
 * if any is missing there.
 */
export async function goModuleTool(tool: GoModuleTool, log: ToolLog): Promise<string> {
  const dir = join(cacheRoot(), 'bin', `${tool.name}-${tool.version}`);
  const complete = async (): Promise<boolean> =>
    (await Promise.all(tool.commands.map((c) => isExecutable(join(dir, c.name))))).every(Boolean);
  if (await complete()) return dir;
  await withLock(join(cacheRoot(), 'locks', `${tool.name}-${tool.version}`), log, async () => {
    if (!(await complete())) await build(tool, dir, log);
  });
  return dir;
}

async function build(tool: GoModuleTool, dest: string, log: ToolLog): Promise<void> {
  const names = tool.commands.map((c) => c.name);
  const what = `${names.join(', ')} ${tool.version}`;
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
    await runGo(
      [
        'install',
        '-v',
        '-trimpath',
        '-ldflags',
        ['-s -w', ...(tool.ldflags ?? [])].join(' '),
        ...tool.commands.map((c) => `${c.pkg}@${tool.version}`),
      ],
      {
        cwd: tmpdir(),
        // Static binaries: nothing of the machine's C libraries is needed at run time.
        env: { CGO_ENABLED: '0', GOBIN: out },
        purpose: `building ${what}`,
        onLine: () => {
          compiled++;
        },
      },
    );
  } finally {
    clearInterval(progress);
  }
  for (const c of tool.commands) {
    const { stdout, stderr } = await exec(join(out, c.name), [...c.versionArgs], {
      env: { ...process.env, ...c.versionEnv },
    });
    if (!c.versionMatches(stdout, stderr))
      throw new Error(
        `the ${c.name} just built reports "${`${stdout}${stderr}`.trim()}", not ${tool.version}`,
      );
  }
  // Every command is built and checked before the first is moved: a folder with some of
  // them is rebuilt whole, never half used.
  await mkdir(dest, { recursive: true });
  for (const name of names) await rename(join(out, name), join(dest, name));
  log(`${what} built in ${Math.round((Date.now() - started) / 1000)} s`);
}
