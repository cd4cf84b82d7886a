/**
 * The shipped directory, a JSON file: read at the start (a file that is not a directory
 * stops the bridge), re-read when it changes, including when a ConfigMap volume swaps it
 * through a symlink, and, when it breaks later, still answering from its last good
 * contents rather than forgetting every domain.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { JsonFileDirectory } from '../src/bridge/directory-file.ts';
import { blogRecord, shopRecord } from './support/bridge-records.ts';
import { directoryJson } from './support/bridge-server.ts';

const log = pino({ level: 'silent' });
const dir = mkdtempSync(join(tmpdir(), 'bridge-directory-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('the directory file on disk', () => {
  it('refuses to start on a file that is not a directory, saying why', async () => {
    const path = join(dir, 'bad.json');
    writeFileSync(path, '{"shop.example.com": {}}');
    await assert.rejects(
      JsonFileDirectory.open(path, log),
      /bad\.json: expected an object with a "domains" object/,
    );
    await assert.rejects(JsonFileDirectory.open(join(dir, 'missing.json'), log), /ENOENT/);
  });

  it('sees a new version of the file at the next lookup', async () => {
    const path = join(dir, 'plain.json');
    writeFileSync(path, directoryJson({ 'shop.example.com': shopRecord() }));
    const directory = await JsonFileDirectory.open(path, log);
    assert.equal((await directory.lookup('shop.example.com'))?.kind, 'Record');
    assert.equal(await directory.lookup('blog.example.com'), undefined);
    // Written beside and renamed, as an editor does: a new file, atomically.
    writeFileSync(`${path}.new`, directoryJson({ 'blog.example.com': blogRecord() }));
    renameSync(`${path}.new`, path);
    assert.equal(await directory.lookup('shop.example.com'), undefined);
    assert.equal((await directory.lookup('blog.example.com'))?.kind, 'Record');
  });

  it('follows a ConfigMap volume that swaps its data directory behind a symlink', async () => {
    // The kubelet's layout: key -> ..data/key, ..data -> ..<timestamp>, swapped by rename.
    const volume = mkdtempSync(join(dir, 'volume-'));
    const first = join(volume, '..2024_01_01');
    const second = join(volume, '..2024_01_02');
    for (const [d, records] of [
      [first, { 'shop.example.com': shopRecord() }],
      [second, { 'blog.example.com': blogRecord() }],
    ] as const) {
      mkdirSync(d);
      writeFileSync(join(d, 'domains.json'), directoryJson(records));
    }
    symlinkSync('..2024_01_01', join(volume, '..data'));
    symlinkSync('..data/domains.json', join(volume, 'domains.json'));
    const directory = await JsonFileDirectory.open(join(volume, 'domains.json'), log);
    assert.equal((await directory.lookup('shop.example.com'))?.kind, 'Record');
    symlinkSync('..2024_01_02', join(volume, '..data_tmp'));
    renameSync(join(volume, '..data_tmp'), join(volume, '..data'));
    assert.equal(await directory.lookup('shop.example.com'), undefined);
    assert.equal((await directory.lookup('blog.example.com'))?.kind, 'Record');
  });

  it('keeps answering from the last good contents when the file breaks or disappears', async () => {
    const path = join(dir, 'breaks.json');
    writeFileSync(path, directoryJson({ 'shop.example.com': shopRecord() }));
    const directory = await JsonFileDirectory.open(path, log);
    writeFileSync(path, '{"domains": {"shop.exa');
    assert.equal((await directory.lookup('shop.example.com'))?.kind, 'Record');
    rmSync(path);
    assert.equal((await directory.lookup('shop.example.com'))?.kind, 'Record');
    writeFileSync(path, directoryJson({ 'blog.example.com': blogRecord() }));
    assert.equal((await directory.lookup('blog.example.com'))?.kind, 'Record');
  });
});
