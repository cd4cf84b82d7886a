/**
 * The sensitive-file suffixes: the seed's count, no duplicates, each a suffix Istio's path
 * matching can take, and the docs list exactly the code's. Pure.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { SENSITIVE_FILE_SUFFIXES } from '../src/domain/edge-site/sensitive-files.ts';

const DOCS = join(import.meta.dirname, '../../../docs/exoledge.md');

describe('sensitive files', () => {
  it('are the 93 suffixes the seed counts, each once', () => {
    assert.equal(SENSITIVE_FILE_SUFFIXES.length, 93);
    assert.equal(new Set(SENSITIVE_FILE_SUFFIXES).size, 93);
  });

  it('are each a plain suffix (no wildcard, no space): Istio matches them as `*<suffix>`', () => {
    for (const s of SENSITIVE_FILE_SUFFIXES) assert.match(s, /^[^*\s]+$/, s);
  });

  it('never deny what sites serve to visitors', () => {
    for (const visible of [
      '.zip',
      '.tar.gz',
      '.json',
      '.xml',
      '.txt',
      '.crt',
      '.html',
      '.js',
      '.css',
      '.png',
    ]) {
      assert.ok(!SENSITIVE_FILE_SUFFIXES.includes(visible), visible);
    }
  });

  it('are listed in docs/exoledge.md, in the same order', () => {
    const docs = readFileSync(DOCS, 'utf8');
    const section = docs.slice(docs.indexOf('### Sensitive files'));
    assert.ok(section.length > 0, 'docs/exoledge.md has a "### Sensitive files" section');
    const listed = [...section.matchAll(/^\| `([^`]+)`\s*\|/gm)].map((m) => m[1]);
    assert.deepEqual(listed.slice(0, 93), [...SENSITIVE_FILE_SUFFIXES]);
  });
});
