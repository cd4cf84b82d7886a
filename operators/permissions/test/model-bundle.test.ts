/**
 * The bundle's bytes, read back by the system's GNU tar (an independent reader of
 * the ustar format): exactly `data.json` and `.manifest` with the expected contents,
 * owner 0/0, mode 0644, mtime 0; the same bytes for the same model, in any engine.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { buildBundle, tar } from '../src/model/bundle.ts';
import { BUNDLE_ROOT, StorageEngine } from '../src/model/storage-engine.ts';
import { permission, scope, userRole } from './support/model-objects.ts';

const exec = promisify(execFile);
let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'permissions-bundle-test-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

let n = 0;
/** Writes `bytes` to a file, lists it with `tar -tv` and extracts it with `tar -x`. */
async function systemTar(bytes: Buffer, gzip: boolean) {
  const at = join(dir, String(n++));
  const file = `${at}.tar${gzip ? '.gz' : ''}`;
  await writeFile(file, bytes);
  const z = gzip ? ['-z'] : [];
  const { stdout: listing } = await exec('tar', [...z, '--numeric-owner', '--full-time', '-tvf', file], {
    env: { ...process.env, TZ: 'UTC' },
  });
  await exec('mkdir', [at]);
  await exec('tar', [...z, '-xf', file, '-C', at]);
  const files: Record<string, string> = {};
  for (const name of (await readdir(at)).sort()) files[name] = await readFile(join(at, name), 'utf8');
  return { listing: listing.trim().split('\n'), files };
}

function model(): StorageEngine {
  const e = new StorageEngine();
  e.upsertPermission(
    permission('team', 'view', { granted_cluster_rules: [{ verbs: ['get'], resources: ['pods'] }] }),
  );
  e.upsertScope(scope('team', 'dev'), { clusters: ['fleet/c1'], paths: ['/fleet/c1'] });
  e.upsertRole('UserRole', userRole('team', 'a', 'alice', 'dev', ['view']));
  return e;
}

describe('bundle tar.gz', () => {
  it('unpacks with the system tar to exactly data.json and .manifest with the model and its revision', async () => {
    const e = model();
    const bytes = buildBundle(e.dataJson(), e.revision(), [BUNDLE_ROOT]);
    const { files, listing } = await systemTar(bytes, true);
    assert.deepEqual(Object.keys(files), ['.manifest', 'data.json']);
    assert.equal(files['data.json'], e.dataJson());
    assert.deepEqual(JSON.parse(files['data.json'] ?? ''), {
      shturval: {
        groups: {},
        permissions: {
          'team/view': {
            granted_cluster_rules: [{ resources: ['pods'], verbs: ['get'] }],
            level: 'cluster',
            platform_rules: [],
            plugins: null,
          },
        },
        scopes: {
          'team/dev': {
            clusters: ['fleet/c1'],
            level: 'cluster',
            namespaces: [],
            paths: ['/fleet/c1'],
            tenant: null,
          },
        },
        tenants: {},
        users: { alice: [{ permissions: ['team/view'], role: 'team/a', scope: 'team/dev' }] },
      },
    });
    // The revision is the sha256 of data.json as shipped.
    const revision = createHash('sha256')
      .update(files['data.json'] ?? '')
      .digest('hex');
    assert.equal(files['.manifest'], `{"revision":"${revision}","roots":["shturval"]}`);
    // In archive order, as `tar -tv --numeric-owner --full-time` prints them (UTC).
    const size = Buffer.byteLength(files['data.json'] ?? '');
    const manifestSize = Buffer.byteLength(files['.manifest'] ?? '');
    assert.deepEqual(
      listing.map((l) => l.split(/\s+/)),
      [
        ['-rw-r--r--', '0/0', String(size), '1970-01-01', '00:00:00', 'data.json'],
        ['-rw-r--r--', '0/0', String(manifestSize), '1970-01-01', '00:00:00', '.manifest'],
      ],
    );
  });

  it('is the same bytes for the same model, from a second engine too', () => {
    const a = model();
    const b = model();
    const one = buildBundle(a.dataJson(), a.revision(), [BUNDLE_ROOT]);
    assert.deepEqual(buildBundle(a.dataJson(), a.revision(), [BUNDLE_ROOT]), one);
    assert.deepEqual(buildBundle(b.dataJson(), b.revision(), [BUNDLE_ROOT]), one);
    // gzip header: magic, deflate, no flags, mtime 0.
    assert.deepEqual([...one.subarray(0, 8)], [0x1f, 0x8b, 8, 0, 0, 0, 0, 0]);
  });

  it('differs when the model does', () => {
    const a = model();
    const b = model();
    b.removeRole('UserRole', 'team', 'a');
    assert.notDeepEqual(
      buildBundle(b.dataJson(), b.revision(), [BUNDLE_ROOT]),
      buildBundle(a.dataJson(), a.revision(), [BUNDLE_ROOT]),
    );
  });

  it('writes 512-byte ustar blocks: a header per file, content padded, two zero blocks at the end', () => {
    const raw = gunzipSync(buildBundle('{}', 'r', ['x']));
    // header + 1 block of "{}" + header + 1 block of manifest + 2 end blocks.
    assert.equal(raw.length, 6 * 512);
    assert.equal(raw.subarray(257, 265).toString('latin1'), 'ustar\u000000');
    assert.equal(raw.subarray(0, 9).toString('latin1'), 'data.json');
    assert.equal(raw.subarray(1024, 1033).toString('latin1'), '.manifest');
    assert.ok(raw.subarray(4 * 512).every((b) => b === 0));
  });
});

describe('tar writer', () => {
  it('round-trips any names and contents through the system tar, at and around block boundaries (property)', async () => {
    const content = fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 700 }),
      fc.constantFrom(0, 1, 511, 512, 513, 1024).map((k) => 'x'.repeat(k)),
    );
    const name = fc.stringMatching(/^[a-z][a-z0-9._-]{0,40}$/);
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.tuple(name, content), { minLength: 1, maxLength: 3, selector: ([k]) => k }),
        async (entries) => {
          const { files } = await systemTar(
            tar(entries.map(([name, content]) => ({ name, content }))),
            false,
          );
          assert.deepEqual(files, Object.fromEntries([...entries].sort(([a], [b]) => (a < b ? -1 : 1))));
        },
      ),
      { numRuns: 25 },
    );
  });

  it('refuses a name longer than the 100-byte field', () => {
    assert.throws(() => tar([{ name: 'a'.repeat(101), content: '' }]), /longer than 100 bytes/);
  });
});
