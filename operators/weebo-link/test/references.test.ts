/**
 * References that nothing else checks. Node resolves a package's `exports` and `bin` only
 * when someone imports or runs it, and tsc never reads comments, so a path in a
 * package.json or a file named in a comment can point at nothing for months (weebo-link's
 * `exports` did). The package.json check covers every workspace, not only this one: one
 * test holds the rule for all, rather than a copy per package that a new one would lack.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { describe, it } from 'node:test';

const packageDir = join(import.meta.dirname, '..');
const repoRoot = join(packageDir, '../..');

function readJson(path: string): unknown {
  return JSON.parse(readFileSync(path, 'utf8'));
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The workspace directories the root package.json names (`dir/*` patterns, as ours are). */
function workspaces(): string[] {
  const root = readJson(join(repoRoot, 'package.json'));
  assert.ok(isRecord(root) && Array.isArray(root.workspaces), 'the root package.json lists workspaces');
  const dirs: string[] = [];
  for (const pattern of root.workspaces) {
    assert.ok(typeof pattern === 'string' && /^[\w.-]+\/\*$/.test(pattern), `a dir/* pattern: ${pattern}`);
    const parent = join(repoRoot, pattern.slice(0, -2));
    for (const name of readdirSync(parent)) {
      const dir = join(parent, name);
      if (existsSync(join(dir, 'package.json'))) dirs.push(dir);
    }
  }
  return dirs;
}

/** Every file path an `exports` value names, through conditions and subpaths (`null` excludes a subpath). */
function exportTargets(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(exportTargets);
  if (isRecord(value)) return Object.values(value).flatMap(exportTargets);
  return [];
}

/** The paths a package.json promises: `main`, `exports` and `bin`, as written. */
function promisedPaths(pkg: unknown): { field: string; path: string }[] {
  if (!isRecord(pkg)) return [];
  const out: { field: string; path: string }[] = [];
  if (typeof pkg.main === 'string') out.push({ field: 'main', path: pkg.main });
  for (const path of exportTargets(pkg.exports)) out.push({ field: 'exports', path });
  if (typeof pkg.bin === 'string') out.push({ field: 'bin', path: pkg.bin });
  else if (isRecord(pkg.bin))
    for (const [name, path] of Object.entries(pkg.bin))
      if (typeof path === 'string') out.push({ field: `bin.${name}`, path });
  return out;
}

describe('package.json references', () => {
  it('every exports, bin and main path of every workspace package is a file', () => {
    const dirs = workspaces();
    assert.ok(
      dirs.some((d) => d === packageDir),
      'weebo-link is one of the workspaces',
    );
    const missing: string[] = [];
    let checked = 0;
    for (const dir of dirs) {
      for (const { field, path } of promisedPaths(readJson(join(dir, 'package.json')))) {
        checked++;
        // A subpath pattern (`./*`) names no single file; ours have none.
        assert.ok(!path.includes('*'), `${relative(repoRoot, dir)}: ${field} ${path} is a pattern`);
        const file = join(dir, path);
        if (!existsSync(file) || !statSync(file).isFile())
          missing.push(`${relative(repoRoot, dir)}/package.json ${field}: ${path}`);
      }
    }
    assert.ok(checked > 0, 'some paths were checked');
    assert.deepEqual(missing, []);
  });

  it("`@operators/weebo-link` imports, with the operator's public surface", async () => {
    const mod: Record<string, unknown> = await import('@operators/weebo-link');
    for (const name of ['startWeeboLink', 'loadRules', 'derivePolicyRules', 'decide', 'desiredTarget'])
      assert.equal(typeof mod[name], 'function', name);
    for (const name of ['RULES_CONFIGMAP', 'RULES_KEY']) assert.equal(typeof mod[name], 'string', name);
  });
});

function filesUnder(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir)) {
    if (e === 'node_modules' || e.startsWith('.')) continue;
    const p = join(dir, e);
    if (statSync(p).isDirectory()) filesUnder(p, out);
    else out.push(p);
  }
  return out;
}

/** The comment text of a TypeScript or JavaScript file, line by line (doc blocks and `//`). */
function commentLines(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  text.split('\n').forEach((raw, i) => {
    const t = raw.trim();
    if (t.startsWith('*') || t.startsWith('/*') || t.startsWith('//')) out.push({ line: i + 1, text: t });
    else {
      // A trailing comment; `://` of a URL in a string is not one.
      const at = raw.search(/(^|\s)\/\/\s/);
      if (at >= 0) out.push({ line: i + 1, text: raw.slice(at) });
    }
  });
  return out;
}

describe("weebo-link's comments", () => {
  const sources = filesUnder(packageDir).filter(
    (f) => /\.(ts|js)$/.test(f) && !relative(packageDir, f).startsWith('chart'),
  );
  const names = new Set(filesUnder(packageDir).map((f) => basename(f)));

  it('name only files that exist (in this package, or docs/ at the root)', () => {
    const dead: string[] = [];
    for (const file of sources) {
      for (const c of commentLines(readFileSync(file, 'utf8'))) {
        for (const m of c.text.matchAll(/[\w./-]*[\w-]+\.(?:ts|js)\b/g))
          if (!names.has(basename(m[0]))) dead.push(`${relative(packageDir, file)}:${c.line}: ${m[0]}`);
        for (const m of c.text.matchAll(/\bdocs\/[\w.-]+\.md\b/g))
          if (!existsSync(join(repoRoot, m[0])))
            dead.push(`${relative(packageDir, file)}:${c.line}: ${m[0]}`);
      }
    }
    assert.deepEqual(dead, []);
  });

  it('{@link X} names something the file declares or imports', () => {
    const dead: string[] = [];
    for (const file of sources) {
      const text = readFileSync(file, 'utf8');
      const rest = text.replace(/\{@link [^}]*\}/g, '');
      const comments = commentLines(text)
        .map((c) => c.text)
        .join('\n');
      for (const m of comments.matchAll(/\{@link ([\w$]+)/g)) {
        const name = m[1] ?? '';
        if (!new RegExp(`\\b${name.replace('$', '\\$')}\\b`).test(rest))
          dead.push(`${relative(packageDir, file)}: {@link ${name}}`);
      }
    }
    assert.deepEqual(dead, []);
  });
});
