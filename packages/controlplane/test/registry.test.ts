/**
 * The reference registry as a push target: an OCI image layout made with umoci and pushed
 * with skopeo (the tools the project builds images with, no Docker) is served back by the
 * registry under the digest the layout's own index.json names, which is the oracle
 * independent of both the registry and skopeo.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ensureDebianPackages, freePort, type Registry, startRegistry } from '../src/testing.ts';

const exec = promisify(execFile);

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';

/** skopeo and umoci answer in well under a second here; a push stuck longer has hung. */
const TOOL_TIMEOUT_MS = 120_000;

function sha256(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

function run(cmd: string, args: readonly string[]): Promise<{ stdout: string; stderr: string }> {
  return exec(cmd, [...args], { timeout: TOOL_TIMEOUT_MS });
}

/**
 * skopeo with the signature policy "accept anything": the source is a layout this test
 * just made, and the machine's /etc/containers/policy.json (present or not) must not
 * decide the outcome.
 */
function skopeoCopy(from: string, to: string): Promise<{ stdout: string; stderr: string }> {
  return run('skopeo', ['--insecure-policy', 'copy', '--dest-tls-verify=false', from, to]);
}

/** A one-layer image in an OCI layout at `layout`, tag `t`: one file and an entrypoint. */
async function tinyImage(work: string): Promise<string> {
  const layout = join(work, 'layout');
  const bundle = join(work, 'bundle');
  await run('umoci', ['init', '--layout', layout]);
  await run('umoci', ['new', '--image', `${layout}:t`]);
  await run('umoci', ['unpack', '--rootless', '--image', `${layout}:t`, bundle]);
  await writeFile(join(bundle, 'rootfs', 'hello.txt'), 'hello from a tiny image\n');
  await run('umoci', ['repack', '--image', `${layout}:t`, bundle]);
  await run('umoci', ['config', '--image', `${layout}:t`, '--config.entrypoint', '/bin/x']);
  return layout;
}

interface Descriptor {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly annotations?: Record<string, string>;
}

describe('the reference registry', () => {
  let registry: Registry;
  let work: string;
  let layout: string;

  before(async () => {
    await ensureDebianPackages(['umoci', 'skopeo']);
    registry = await startRegistry();
    work = await mkdtemp(join(tmpdir(), 'registry-test-'));
    layout = await tinyImage(work);
  });

  after(async () => {
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('receives a skopeo push of an OCI layout and serves the same manifest and config blob back', async () => {
    const index = JSON.parse(await readFile(join(layout, 'index.json'), 'utf8')) as {
      manifests: Descriptor[];
    };
    const tagged = index.manifests.filter(
      (m) => m.annotations?.['org.opencontainers.image.ref.name'] === 't',
    );
    assert.equal(tagged.length, 1, 'the layout names exactly one manifest for tag t');
    const expected = tagged[0] as Descriptor;
    assert.equal(expected.mediaType, OCI_MANIFEST);

    await skopeoCopy(`oci:${layout}:t`, `docker://${registry.host}/test/tiny:t`);

    const res = await fetch(`${registry.url}/v2/test/tiny/manifests/t`, {
      headers: { Accept: OCI_MANIFEST },
    });
    assert.equal(res.status, 200);
    const body = new Uint8Array(await res.arrayBuffer());
    assert.equal(res.headers.get('docker-content-digest'), expected.digest);
    assert.equal(res.headers.get('content-type'), OCI_MANIFEST);
    // The bytes themselves, not only the header: the registry's answer hashes to the layout's digest.
    assert.equal(sha256(body), expected.digest);
    assert.equal(body.length, expected.size);

    const manifest = JSON.parse(new TextDecoder().decode(body)) as {
      config: Descriptor;
      layers: Descriptor[];
    };
    assert.equal(manifest.layers.length, 1, 'one layer, from the one repack');
    const blob = await fetch(`${registry.url}/v2/test/tiny/blobs/${manifest.config.digest}`);
    assert.equal(blob.status, 200);
    const config = new Uint8Array(await blob.arrayBuffer());
    assert.equal(sha256(config), manifest.config.digest);
    const local = await readFile(
      join(layout, 'blobs', 'sha256', manifest.config.digest.replace(/^sha256:/, '')),
    );
    assert.deepEqual(Buffer.from(config), local, 'the served config is the layout’s own bytes');
    const parsed = JSON.parse(new TextDecoder().decode(config)) as { config?: { Entrypoint?: string[] } };
    assert.deepEqual(parsed.config?.Entrypoint, ['/bin/x']);
  });

  it('a push to a port where nothing listens fails with skopeo’s error instead of hanging', async () => {
    const port = await freePort();
    const err = await skopeoCopy(`oci:${layout}:t`, `docker://127.0.0.1:${port}/test/tiny:t`).then(
      () => undefined,
      (e: unknown) => e as { code?: number; killed?: boolean; signal?: string | null; stderr?: string },
    );
    assert.ok(err, 'skopeo must not report success');
    assert.equal(err.killed, false, 'skopeo ran into the timeout instead of failing');
    assert.ok(typeof err.code === 'number' && err.code !== 0, `a non-zero exit code, got ${err.code}`);
    assert.match(err.stderr ?? '', /connection refused/);
  });
});
