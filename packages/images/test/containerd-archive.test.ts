/**
 * Images for a node without a registry: a minimal image around one static binary
 * (`staticBinaryImage`, for the pause and kubectl images a node needs and cannot pull),
 * and an OCI layout written as the tar `ctr -n k8s.io images import` takes
 * (`containerdArchive`). What the code wrote is read back by independent tools: skopeo
 * (the OCI archive and layout transports), GNU tar, and the layout's own index.json read
 * here. containerd itself is not started: the node's end-to-end suite imports these.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, cp, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ensureDebianPackages } from '@operators/controlplane/testing';
import fc from 'fast-check';
import { chooseManifest, containerdArchive, type OciIndex, referenceTag } from '../src/containerd-archive.ts';
import { staticBinaryImage } from '../src/static-binary-image.ts';

const execFileP = promisify(execFile);

interface IndexEntry {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly annotations?: Record<string, string>;
}

/** The layout's index.json as the file says, not as the code under test reads it. */
async function layoutIndex(layout: string): Promise<{ manifests: IndexEntry[] }> {
  return JSON.parse(await readFile(join(layout, 'index.json'), 'utf8')) as { manifests: IndexEntry[] };
}

async function skopeoJson<T>(...args: string[]): Promise<T> {
  const { stdout } = await execFileP('skopeo', args, { maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout) as T;
}

async function tarList(tar: string): Promise<string[]> {
  const { stdout } = await execFileP('tar', ['-tf', tar]);
  return stdout.split('\n').filter((l) => l !== '');
}

async function fileSha256(path: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(path))
    .digest('hex');
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** Arbitrary property runs: a fresh seed each run, printed so that a failure can be replayed. */
function seeded(name: string): { seed: number } {
  const seed = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
  process.stderr.write(`${name}: fast-check seed ${seed} (replay with FC_SEED=${seed})\n`);
  return { seed };
}

describe('images for a node without a registry', () => {
  let dir: string;
  /** A small executable to put in images: a copy of /bin/true (it need not run here). */
  let binary: string;

  before(async () => {
    await ensureDebianPackages(['skopeo']);
    dir = await mkdtemp(join(tmpdir(), 'containerd-archive-test-'));
    binary = join(dir, 'tiny');
    await copyFile('/bin/true', binary);
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('an archive holds the layout image skopeo reads back, named for containerd in its index', async () => {
    const layout = join(dir, 'one');
    await staticBinaryImage({
      binary,
      pathInImage: '/bin/tiny',
      entrypoint: ['/bin/tiny'],
      user: 65532,
      name: 'example.test/tools/tiny:v1.0',
      out: layout,
    });
    const [own] = (await layoutIndex(layout)).manifests;
    assert.ok(own);
    const tar = join(dir, 'one.tar');
    await containerdArchive(layout, 'example.test/tools/tiny:v1.0', tar);

    const inspected = await skopeoJson<{ Digest: string }>('inspect', `oci-archive:${tar}:v1.0`);
    assert.equal(inspected.Digest, own.digest);

    const blobs = (await readdir(join(layout, 'blobs', 'sha256'))).sort();
    assert.equal(blobs.length, 3, 'config, layer, manifest');
    assert.deepEqual(await tarList(tar), [
      'blobs/',
      'blobs/sha256/',
      ...blobs.map((b) => `blobs/sha256/${b}`),
      'index.json',
      'oci-layout',
    ]);

    const { stdout } = await execFileP('tar', ['-xOf', tar, 'index.json']);
    const index = JSON.parse(stdout) as { manifests: IndexEntry[] };
    assert.equal(index.manifests.length, 1);
    assert.equal(index.manifests[0]!.digest, own.digest);
    assert.deepEqual(index.manifests[0]!.annotations, {
      'io.containerd.image.name': 'example.test/tools/tiny:v1.0',
      'org.opencontainers.image.ref.name': 'v1.0',
    });
  });

  it('archiving the same layout twice gives the same bytes', async () => {
    const layout = join(dir, 'again');
    await staticBinaryImage({
      binary,
      pathInImage: '/tiny',
      entrypoint: ['/tiny'],
      user: 65535,
      name: 'example.test/tiny:1',
      out: layout,
    });
    await containerdArchive(layout, 'example.test/tiny:1', join(dir, 'again-1.tar'));
    // A later build sees later file times: they must not reach the archive.
    await utimes(join(layout, 'index.json'), new Date(), new Date());
    await containerdArchive(layout, 'example.test/tiny:1', join(dir, 'again-2.tar'));
    assert.equal(await fileSha256(join(dir, 'again-1.tar')), await fileSha256(join(dir, 'again-2.tar')));
  });

  it('a static binary image is the same digest from the same binary, with the entrypoint, user and platform given', async () => {
    const copy = join(dir, 'tiny-copy');
    await copyFile(binary, copy);
    await utimes(copy, new Date('2030-01-01T00:00:00Z'), new Date('2030-01-01T00:00:00Z'));
    const options = {
      pathInImage: '/pause',
      entrypoint: ['/pause'],
      user: 65535,
      name: 'registry.k8s.io/pause:3.10',
    } as const;
    await staticBinaryImage({ ...options, binary, out: join(dir, 'pause-a') });
    await staticBinaryImage({ ...options, binary: copy, out: join(dir, 'pause-b') });
    const a = (await layoutIndex(join(dir, 'pause-a'))).manifests;
    const b = (await layoutIndex(join(dir, 'pause-b'))).manifests;
    assert.equal(a.length, 1);
    assert.equal(a[0]!.digest, b[0]!.digest);
    assert.equal(a[0]!.annotations?.['org.opencontainers.image.ref.name'], '3.10');

    const config = await skopeoJson<{
      architecture: string;
      os: string;
      config: { Entrypoint: string[]; User: string };
      rootfs: { diff_ids: string[] };
    }>('inspect', '--config', `oci:${join(dir, 'pause-a')}:3.10`);
    assert.equal(config.os, 'linux');
    assert.equal(config.architecture, { x64: 'amd64', arm64: 'arm64' }[process.arch as string]);
    assert.deepEqual(config.config.Entrypoint, ['/pause']);
    assert.equal(config.config.User, '65535:65535');

    // The one layer holds the binary where the entrypoint says, executable, owned by root.
    const layerHex = config.rootfs.diff_ids[0]!.slice('sha256:'.length);
    const { stdout } = await execFileP('tar', [
      '-tvf',
      join(dir, 'pause-a', 'blobs', 'sha256', layerHex),
      '--numeric-owner',
    ]);
    const entry = stdout.split('\n').find((l) => l.endsWith(' ./pause'));
    assert.match(entry ?? stdout, /^-rwxr-xr-x 0\/0 +\d+ 1970-01-01 00:00 \.\/pause$/);
    assert.equal(
      Number(/^-\S+ \S+ +(\d+)/.exec(entry!)![1]),
      (await stat(binary)).size,
      'the layer holds the whole binary',
    );
  });

  it('of a layout with several tagged images, the archive holds the one the name tags, and only its blobs', async () => {
    const { layout, first, second } = await twoImageLayout('tagged', ['1.0', '2.0']);
    const tar = join(dir, 'tagged.tar');
    await containerdArchive(layout, 'example.test/tiny:2.0', tar);
    const inspected = await skopeoJson<{ Digest: string }>('inspect', `oci-archive:${tar}`);
    assert.equal(inspected.Digest, second.digest);
    const listed = await tarList(tar);
    assert.ok(listed.includes(`blobs/sha256/${second.digest.slice(7)}`));
    assert.ok(!listed.includes(`blobs/sha256/${first.digest.slice(7)}`), 'the other image stays out');
  });

  it('a layout with two manifests and no annotation to choose by is refused, naming both', async () => {
    const { layout, first, second } = await twoImageLayout('untagged', [undefined, undefined]);
    const tar = join(dir, 'untagged.tar');
    await assert.rejects(containerdArchive(layout, 'example.test/tiny:1.0', tar), (err: Error) => {
      assert.match(err.message, /cannot archive example\.test\/tiny:1\.0/);
      assert.ok(err.message.includes(first.digest), err.message);
      assert.ok(err.message.includes(second.digest), err.message);
      return true;
    });
    assert.equal(await exists(tar), false, 'nothing is left where the archive would go');
  });

  it('an image name without a tag is refused before anything is written', async () => {
    const tar = join(dir, 'no-tag.tar');
    await assert.rejects(
      containerdArchive(join(dir, 'one'), 'localhost:5000/tiny', tar),
      /image name "localhost:5000\/tiny" has no tag/,
    );
    assert.equal(await exists(tar), false);
  });

  /**
   * A layout holding two images (entrypoints `/a` and `/b`) whose index tags them with
   * `tags` (no annotation at all for `undefined`), as two builds copied into one layout.
   */
  async function twoImageLayout(
    name: string,
    tags: readonly [string | undefined, string | undefined],
  ): Promise<{ layout: string; first: IndexEntry; second: IndexEntry }> {
    const layout = join(dir, name);
    const other = join(dir, `${name}-other`);
    const common = { binary, pathInImage: '/x', user: 65532, name: 'example.test/tiny:0' } as const;
    await staticBinaryImage({ ...common, entrypoint: ['/a'], out: layout });
    await staticBinaryImage({ ...common, entrypoint: ['/b'], out: other });
    await cp(join(other, 'blobs'), join(layout, 'blobs'), { recursive: true });
    const entries = [(await layoutIndex(layout)).manifests[0]!, (await layoutIndex(other)).manifests[0]!];
    const [first, second] = entries.map(({ annotations: _, ...d }, i): IndexEntry => {
      const tag = tags[i];
      return tag === undefined ? d : { ...d, annotations: { 'org.opencontainers.image.ref.name': tag } };
    });
    assert.notEqual(first!.digest, second!.digest);
    await writeFile(
      join(layout, 'index.json'),
      JSON.stringify({ schemaVersion: 2, manifests: [first, second] }),
    );
    return { layout, first: first!, second: second! };
  }
});

describe('which reference and which manifest an archive is for', () => {
  const component = fc.stringMatching(/^[a-z0-9]+(?:[._-][a-z0-9]+)*$/);
  const host = fc.oneof(
    fc.constant(''),
    fc.tuple(fc.stringMatching(/^[a-z0-9]+(\.[a-z0-9]+)*$/), fc.option(fc.integer({ min: 1, max: 65535 }))),
  );
  const repository = fc
    .tuple(host, fc.array(component, { minLength: 1, maxLength: 3 }))
    .map(([h, path]) =>
      h === '' ? path.join('/') : `${h[0]}${h[1] === null ? '' : `:${h[1]}`}/${path.join('/')}`,
    );
  const tag = fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/);

  it('the tag is what follows the last colon after the last slash; a reference without one is refused', () => {
    fc.assert(
      fc.property(repository, tag, (repo, t) => {
        assert.equal(referenceTag(`${repo}:${t}`), t);
        assert.throws(() => referenceTag(repo), /has no tag/);
        assert.throws(() => referenceTag(`${repo}@sha256:${'0'.repeat(64)}`), /has no tag/);
      }),
      seeded('referenceTag'),
    );
  });

  it('the manifest chosen is the one tagged so, the only untagged one, or none when that is ambiguous', () => {
    const digests = ['sha256:aa', 'sha256:bb', 'sha256:cc'];
    const tags = ['1.0', '2.0'];
    const descriptor = fc.record({
      digest: fc.constantFrom(...digests),
      tag: fc.option(fc.constantFrom(...tags), { nil: undefined }),
    });
    fc.assert(
      fc.property(fc.array(descriptor, { maxLength: 4 }), fc.constantFrom(...tags), (ds, wanted) => {
        const index: OciIndex = {
          manifests: ds.map((d) => ({
            mediaType: 'application/vnd.oci.image.manifest.v1+json',
            digest: d.digest,
            size: 1,
            ...(d.tag === undefined ? {} : { annotations: { 'org.opencontainers.image.ref.name': d.tag } }),
          })),
        };
        const choice = chooseManifest(index, `example.test/x:${wanted}`);
        // A second, plain statement of the rule.
        const tagged = new Set(ds.filter((d) => d.tag === wanted).map((d) => d.digest));
        let expected: string | undefined;
        if (tagged.size === 1) expected = [...tagged][0];
        else if (tagged.size === 0 && ds.length === 1 && ds[0]!.tag === undefined) expected = ds[0]!.digest;
        if (expected === undefined) {
          assert.equal(choice.kind, 'refused');
          // Every candidate is named: those tagged so when they disagree, else all there are.
          const named = tagged.size > 1 ? [...tagged] : ds.map((d) => d.digest);
          if (choice.kind === 'refused')
            for (const d of named) assert.ok(choice.message.includes(d), choice.message);
        } else {
          assert.equal(choice.kind, 'chosen');
          if (choice.kind === 'chosen') assert.equal(choice.descriptor.digest, expected);
        }
      }),
      seeded('chooseManifest'),
    );
  });
});
