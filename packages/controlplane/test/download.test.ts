/**
 * The download path to the binaries, against a local HTTP server standing in for the
 * release hosts (dl.k8s.io, GitHub's release downloads, get.helm.sh): contract-faithful
 * to their layout and checksum files, not the real servers. The stand-in serves files
 * laid out as the official releases are, made by this test from the binaries in the
 * cache, with checksums computed by coreutils' `sha256sum` (not by the code under test),
 * and the releases' own checksum files in the formats they publish (`<binary>.sha256`,
 * `SHA256SUMS`, `<file>.sha256sum`).
 * Every failure must end in one clear error or the documented fallback, and never in a
 * half-installed binary.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { copyFileSync, createReadStream, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { type Builder, binariesMode, type ObtainOptions, obtain, resolveBinaries } from '../src/binaries.ts';
import { DownloadRejected, DownloadUnavailable } from '../src/download.ts';
import { ControlPlaneError } from '../src/errors.ts';
import type { Checksums } from '../src/releases.ts';
import { ETCD_VERSION, HELM_VERSION, KUBERNETES_VERSION, RELEASE_SHA256 } from '../src/versions.ts';

const PLATFORM = 'linux/amd64' as const;
const execFileP = promisify(execFile);

function sha256sum(path: string): string {
  return execFileSync('sha256sum', [path], { encoding: 'utf8' }).split(' ')[0] as string;
}

/** What the stand-in does with a path. */
type Route =
  | { kind: 'file'; path: string }
  /** A small text body: a published checksum file. */
  | { kind: 'text'; body: string }
  /** Announces the whole length, sends half, and closes. */
  | { kind: 'truncated'; path: string }
  /** Accepts the request and never answers. */
  | { kind: 'hang' }
  /** 302 to another path, as GitHub's release links do. */
  | { kind: 'redirect'; to: string }
  /** No length announced: the body ends when the server closes the connection (HTTP/1.0 style). */
  | { kind: 'close'; path: string };

class StandInReleaseHost {
  readonly routes = new Map<string, Route>();
  /** Served for a path with no route, when set. */
  fallback: string | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;
  requests = 0;
  readonly paths: string[] = [];

  constructor() {
    this.server = createServer((req, res) => this.handle(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    const addr = this.server.address() as { port: number };
    return `http://127.0.0.1:${addr.port}`;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    this.requests++;
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    this.paths.push(path);
    const route: Route | undefined =
      this.routes.get(path) ?? (this.fallback ? { kind: 'file', path: this.fallback } : undefined);
    if (!route) {
      res.writeHead(404).end('not found');
      return;
    }
    if (route.kind === 'hang') return;
    if (route.kind === 'text') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(route.body);
      return;
    }
    if (route.kind === 'redirect') {
      res.writeHead(302, { location: route.to }).end();
      return;
    }
    // Streamed from disk, headers first: reading a 100 MB binary whole before answering
    // blocked this process's event loop (the client's too) past the 1 s connect timeout
    // on a loaded machine, and the Kubernetes test failed with "no answer within 1000 ms".
    if (route.kind === 'close') {
      res.writeHead(200, { connection: 'close', 'content-type': 'application/octet-stream' });
      createReadStream(route.path).pipe(res);
      return;
    }
    const size = statSync(route.path).size;
    res.writeHead(200, { 'content-length': size, 'content-type': 'application/octet-stream' });
    if (route.kind === 'file') {
      createReadStream(route.path).pipe(res);
      return;
    }
    const half = createReadStream(route.path, { end: Math.floor(size / 2) - 1 });
    half.on('data', (chunk) => res.write(chunk));
    half.on('end', () => res.write('', () => res.socket?.destroy()));
  }
}

/** No checksum pinned anywhere: each test adds the ones it serves. */
function checksums(extra: Partial<Record<keyof Checksums, string>>): Checksums {
  const out: Record<string, Record<string, string>> = {};
  for (const k of Object.keys(RELEASE_SHA256)) out[k] = {};
  for (const [k, v] of Object.entries(extra)) if (v) out[k] = { [PLATFORM]: v };
  return out as unknown as Checksums;
}

describe('binaries: the download path, against a stand-in release host (contract-faithful, not the real servers)', () => {
  const host = new StandInReleaseHost();
  let base = '';
  let work = '';
  let files = '';
  let real: Awaited<ReturnType<typeof resolveBinaries>>;
  const helmArchive = (): string => join(files, `helm-${HELM_VERSION}-linux-amd64.tar.gz`);
  const etcdArchive = (): string => join(files, `etcd-${ETCD_VERSION}-linux-amd64.tar.gz`);
  const savedCache = process.env.KUBE_OPERATORS_CACHE;

  before(async () => {
    real = await resolveBinaries(() => {});
    work = await mkdtemp(join(tmpdir(), 'download-test-'));
    files = join(work, 'files');
    // The official layouts: helm-vX-linux-amd64.tar.gz holds linux-amd64/helm;
    // etcd-vX-linux-amd64.tar.gz holds etcd-vX-linux-amd64/etcd.
    mkdirSync(join(files, 'linux-amd64'), { recursive: true });
    copyFileSync(real.helm, join(files, 'linux-amd64', 'helm'));
    execFileSync('tar', ['-czf', helmArchive(), '-C', files, 'linux-amd64/helm']);
    const etcdDir = `etcd-${ETCD_VERSION}-linux-amd64`;
    mkdirSync(join(files, etcdDir), { recursive: true });
    copyFileSync(real.etcd, join(files, etcdDir, 'etcd'));
    execFileSync('tar', ['-czf', etcdArchive(), '-C', files, `${etcdDir}/etcd`]);
    base = await host.listen();
  });

  after(async () => {
    if (savedCache === undefined) delete process.env.KUBE_OPERATORS_CACHE;
    else process.env.KUBE_OPERATORS_CACHE = savedCache;
    await host.close();
    await rm(work, { recursive: true, force: true });
  });

  /** A fresh, empty cache for one test. */
  async function emptyCache(): Promise<string> {
    const dir = await mkdtemp(join(work, 'cache-'));
    process.env.KUBE_OPERATORS_CACHE = dir;
    return dir;
  }

  /** Whatever the outcome, the cache holds no binary of the group and no leftover download. */
  function assertNothingInstalled(cache: string, component: string): void {
    const bin = join(cache, 'bin');
    const installed = existsSync(bin) ? readdirSync(bin) : [];
    assert.deepEqual(
      installed.filter((d) => d.startsWith(component) && readdirSync(join(bin, d)).length > 0),
      [],
      'no binary was installed',
    );
    const build = join(cache, 'build');
    const leftovers = existsSync(build)
      ? readdirSync(build, { recursive: true }).filter(
          (f) => String(f).includes('download') && !String(f).endsWith('download'),
        )
      : [];
    assert.deepEqual(leftovers, [], 'no partial download is left');
  }

  const helmFile = `helm-${HELM_VERSION}-linux-amd64.tar.gz`;
  const helmPath = `/${helmFile}`;
  const helmSumsPath = `${helmPath}.sha256sum`;
  /** A build that writes a stand-in helm and counts its calls. */
  const recordingBuilder = (): { build: Builder; built: () => number } => {
    let n = 0;
    return {
      built: () => n,
      build: async (component, version, dest) => {
        n++;
        assert.equal(component, 'helm');
        mkdirSync(dest, { recursive: true });
        await writeFile(join(dest, 'helm'), `#!/bin/sh\necho ${version}+built\n`, { mode: 0o755 });
      },
    };
  };
  const options = (extra: ObtainOptions): ObtainOptions => ({
    platform: PLATFORM,
    bases: { helm: base, etcd: base, kubernetes: base },
    connectTimeoutMs: 1_000,
    stallTimeoutMs: 1_000,
    ...extra,
  });
  const refuseToBuild: Builder = async () => assert.fail('this path must not build');

  it('a good archive is downloaded, verified against its pin, unpacked into the cache, and runs; the pin stands alone where the release publishes no checksum file, saying so', async () => {
    const cache = await emptyCache();
    host.routes.set(helmPath, { kind: 'file', path: helmArchive() });
    host.routes.delete(helmSumsPath);
    const lines: string[] = [];
    const dir = await obtain(
      'helm',
      (m) => lines.push(m),
      options({
        mode: 'download',
        checksums: checksums({ helm: sha256sum(helmArchive()) }),
        build: refuseToBuild,
      }),
    );
    assert.equal(dir, join(cache, 'bin', `helm-${HELM_VERSION}`));
    const version = execFileSync(join(dir, 'helm'), ['version', '--short'], { encoding: 'utf8' });
    assert.match(version, new RegExp(`^${HELM_VERSION.replace(/\./g, '\\.')}`));
    assert.ok(
      lines.some((l) =>
        /downloaded helm: [\d.]+ MB in [\d.]+ s \([\d.]+ MB\/s\), verified: sha256 pinned$/.test(l),
      ),
      lines.join('\n'),
    );
    assert.ok(
      lines.some(
        (l) =>
          l.startsWith(
            `helm: the pin alone, the release's published checksum file ${base}${helmSumsPath} cannot be used: `,
          ) && l.includes('HTTP 404'),
      ),
      lines.join('\n'),
    );
  });

  it('a redirect (as GitHub release links send) is followed, and a body ended by closing the connection is read whole', async () => {
    await emptyCache();
    host.routes.set(helmPath, { kind: 'redirect', to: '/objects/helm.tar.gz' });
    host.routes.set('/objects/helm.tar.gz', { kind: 'close', path: helmArchive() });
    const dir = await obtain(
      'helm',
      () => {},
      options({
        mode: 'download',
        checksums: checksums({ helm: sha256sum(helmArchive()) }),
        build: refuseToBuild,
      }),
    );
    assert.match(execFileSync(join(dir, 'helm'), ['version', '--short'], { encoding: 'utf8' }), /^v3\./);
  });

  it("raw release binaries (the Kubernetes layout) and an etcd archive install and run, with no pin, checked against the releases' published checksum files", async (t) => {
    const cache = await emptyCache();
    for (const [name, path] of [
      ['kube-apiserver', real.kubeApiserver],
      ['kube-controller-manager', real.kubeControllerManager as string],
      ['kubectl', real.kubectl],
    ] as const) {
      const at = `/${KUBERNETES_VERSION}/bin/linux/amd64/${name}`;
      host.routes.set(at, { kind: 'file', path });
      // dl.k8s.io's `<binary>.sha256`: the bare digest.
      host.routes.set(`${at}.sha256`, { kind: 'text', body: sha256sum(path) });
    }
    const etcdFile = `etcd-${ETCD_VERSION}-linux-amd64.tar.gz`;
    host.routes.set(`/${ETCD_VERSION}/${etcdFile}`, { kind: 'file', path: etcdArchive() });
    // etcd's SHA256SUMS: every file of the release, ours among them.
    host.routes.set(`/${ETCD_VERSION}/SHA256SUMS`, {
      kind: 'text',
      body:
        `${'1'.repeat(64)}  etcd-${ETCD_VERSION}-darwin-arm64.zip\n` +
        `${sha256sum(etcdArchive())}  ${etcdFile}\n` +
        `${'2'.repeat(64)}  etcd-${ETCD_VERSION}-linux-arm64.tar.gz\n`,
    });
    const lines: string[] = [];
    const opts = options({ mode: 'download', checksums: checksums({}), build: refuseToBuild });
    const started = Date.now();
    const k8s = await obtain('kubernetes', (m) => lines.push(m), opts);
    const etcd = await obtain('etcd', (m) => lines.push(m), opts);
    t.diagnostic(`kubernetes and etcd from the stand-in host in ${Date.now() - started} ms`);
    assert.match(
      execFileSync(join(k8s, 'kube-apiserver'), ['--version'], { encoding: 'utf8' }),
      new RegExp(KUBERNETES_VERSION),
    );
    assert.match(
      execFileSync(join(etcd, 'etcd'), ['--version'], { encoding: 'utf8' }),
      new RegExp(ETCD_VERSION.slice(1)),
    );
    assert.equal(k8s, join(cache, 'bin', `kubernetes-${KUBERNETES_VERSION}`));
    const verified = lines.filter((l) => l.startsWith('downloaded '));
    assert.deepEqual(
      verified.map((l) => l.replace(/: [\d.]+ MB in .*, verified: /, ': ')),
      [
        `downloaded kube-apiserver: sha256 from the release's published checksum file (${base}/${KUBERNETES_VERSION}/bin/linux/amd64/kube-apiserver.sha256)`,
        `downloaded kube-controller-manager: sha256 from the release's published checksum file (${base}/${KUBERNETES_VERSION}/bin/linux/amd64/kube-controller-manager.sha256)`,
        `downloaded kubectl: sha256 from the release's published checksum file (${base}/${KUBERNETES_VERSION}/bin/linux/amd64/kubectl.sha256)`,
        `downloaded etcd: sha256 from the release's published checksum file (${base}/${ETCD_VERSION}/SHA256SUMS)`,
      ],
    );
  });

  it('a file that does not match its pinned checksum is an error in every mode, and nothing is installed', async () => {
    for (const mode of ['download', 'auto'] as const) {
      const cache = await emptyCache();
      host.routes.set(helmPath, { kind: 'file', path: helmArchive() });
      const wrong = sha256sum(etcdArchive());
      await assert.rejects(
        obtain(
          'helm',
          () => {},
          options({ mode, checksums: checksums({ helm: wrong }), build: refuseToBuild }),
        ),
        (err: Error) => {
          assert.ok(err instanceof ControlPlaneError);
          assert.match(
            err.message,
            new RegExp(`has sha256 ${sha256sum(helmArchive())}, not the pinned sha256 ${wrong}`),
          );
          assert.match(err.message, /nothing was installed/);
          return true;
        },
      );
      assertNothingInstalled(cache, 'helm');
    }
  });

  for (const [label, route, expected] of [
    [
      'a truncated file',
      { kind: 'truncated' },
      /connection closed|terminated|other side closed|after [\d.]+ MB/,
    ],
    ['a 404', undefined, /HTTP 404/],
    ['a hung connection', { kind: 'hang' }, /no answer within 1000 ms/],
  ] as const) {
    it(`${label}: download mode fails with one clear error; auto builds instead and says why`, async () => {
      const sums = checksums({ helm: sha256sum(helmArchive()) });
      if (route) host.routes.set(helmPath, { ...route, path: helmArchive() } as Route);
      else host.routes.delete(helmPath);

      const cache = await emptyCache();
      const started = Date.now();
      await assert.rejects(
        obtain('helm', () => {}, options({ mode: 'download', checksums: sums, build: refuseToBuild })),
        (err: Error) => {
          assert.ok(err instanceof ControlPlaneError);
          assert.match(err.message, expected);
          assert.match(err.message, new RegExp(`downloading ${base}${helmPath}`));
          assert.match(err.message, /fix: /);
          return true;
        },
      );
      assert.ok(Date.now() - started < 5_000, 'the failure is reported within seconds');
      assertNothingInstalled(cache, 'helm');

      await emptyCache();
      const lines: string[] = [];
      let built = 0;
      const fakeBuilder: Builder = async (component, version, dest) => {
        built++;
        assert.equal(component, 'helm');
        mkdirSync(dest, { recursive: true });
        await writeFile(join(dest, 'helm'), `#!/bin/sh\necho ${version}+built\n`, { mode: 0o755 });
      };
      const dir = await obtain(
        'helm',
        (m) => lines.push(m),
        options({ mode: 'auto', checksums: sums, build: fakeBuilder }),
      );
      assert.equal(built, 1);
      assert.equal(execFileSync(join(dir, 'helm'), { encoding: 'utf8' }).trim(), `${HELM_VERSION}+built`);
      const said = lines.filter((l) => l.includes('building from source'));
      assert.equal(said.length, 1, lines.join('\n'));
      assert.match(said[0] as string, expected);
    });
  }

  it("when auto falls back to a build and the build fails, the build's error reaches the caller (never an unhandled rejection)", async () => {
    const cache = await emptyCache();
    host.routes.delete(helmPath);
    const failingBuild: Builder = async () => {
      throw new ControlPlaneError('building helm: the toolchain is missing.', 'install Go.');
    };
    await assert.rejects(
      obtain(
        'helm',
        () => {},
        options({
          mode: 'auto',
          checksums: checksums({ helm: sha256sum(helmArchive()) }),
          build: failingBuild,
        }),
      ),
      /building helm: the toolchain is missing/,
    );
    assertNothingInstalled(cache, 'helm');
  });

  it('download mode with no server listening fails clearly, naming the host and the fix', async () => {
    const cache = await emptyCache();
    const closed = new StandInReleaseHost();
    const deadBase = await closed.listen();
    await closed.close();
    await assert.rejects(
      obtain(
        'helm',
        () => {},
        options({
          mode: 'download',
          bases: { helm: deadBase },
          checksums: checksums({ helm: sha256sum(helmArchive()) }),
          build: refuseToBuild,
        }),
      ),
      (err: Error) => {
        assert.match(err.message, new RegExp(`downloading ${deadBase}${helmPath}: ECONNREFUSED`));
        assert.match(err.message, /fix: .*KUBE_OPERATORS_BINARIES=build/);
        return true;
      },
    );
    assertNothingInstalled(cache, 'helm');
  });

  it('KUBE_OPERATORS_BINARIES=pinned: with no pin for the platform, it builds and says so, fetching nothing, not even a published checksum file', async () => {
    await emptyCache();
    host.routes.set(helmPath, { kind: 'file', path: helmArchive() });
    host.routes.set(helmSumsPath, { kind: 'text', body: `${sha256sum(helmArchive())}  ${helmFile}\n` });
    const lines: string[] = [];
    const builder = recordingBuilder();
    const from = host.paths.length;
    await obtain(
      'helm',
      (m) => lines.push(m),
      options({ mode: 'pinned', checksums: checksums({}), build: builder.build }),
    );
    assert.equal(builder.built(), 1);
    assert.deepEqual(host.paths.slice(from), [], 'nothing is fetched');
    assert.ok(
      lines.some((l) =>
        /building from source, not downloading: no sha256 pinned in versions.ts for helm on linux\/amd64 \(KUBE_OPERATORS_BINARIES=pinned reads no published checksum file\)/.test(
          l,
        ),
      ),
      lines.join('\n'),
    );
  });

  it('KUBE_OPERATORS_BINARIES=pinned: a pinned file is checked against its pin alone, its published file never read', async () => {
    const cache = await emptyCache();
    host.routes.set(helmPath, { kind: 'file', path: helmArchive() });
    host.routes.set(helmSumsPath, { kind: 'text', body: `${'0'.repeat(64)}  ${helmFile}\n` });
    const from = host.paths.length;
    const dir = await obtain(
      'helm',
      () => {},
      options({
        mode: 'pinned',
        checksums: checksums({ helm: sha256sum(helmArchive()) }),
        build: refuseToBuild,
      }),
    );
    assert.equal(dir, join(cache, 'bin', `helm-${HELM_VERSION}`));
    assert.deepEqual(host.paths.slice(from), [helmPath]);
  });

  it("with no pin, a file matching its release's published checksum file is installed, and the line says which trust it used", async () => {
    const cache = await emptyCache();
    host.routes.set(helmPath, { kind: 'file', path: helmArchive() });
    // helm's `.sha256sum`: `shasum -a 256` output, one line for its own file.
    host.routes.set(helmSumsPath, { kind: 'text', body: `${sha256sum(helmArchive())}  ${helmFile}\n` });
    const lines: string[] = [];
    const dir = await obtain(
      'helm',
      (m) => lines.push(m),
      options({ mode: 'auto', checksums: checksums({}), build: refuseToBuild }),
    );
    assert.equal(dir, join(cache, 'bin', `helm-${HELM_VERSION}`));
    assert.match(execFileSync(join(dir, 'helm'), ['version', '--short'], { encoding: 'utf8' }), /^v3\./);
    assert.ok(
      lines.some((l) =>
        l.endsWith(`verified: sha256 from the release's published checksum file (${base}${helmSumsPath})`),
      ),
      lines.join('\n'),
    );
  });

  it('a file that does not match its published checksum is refused in every mode: nothing installed, no build instead', async () => {
    const published = sha256sum(etcdArchive());
    host.routes.set(helmPath, { kind: 'file', path: helmArchive() });
    host.routes.set(helmSumsPath, { kind: 'text', body: `${published}  ${helmFile}\n` });
    for (const mode of ['download', 'auto'] as const) {
      const cache = await emptyCache();
      await assert.rejects(
        obtain('helm', () => {}, options({ mode, checksums: checksums({}), build: refuseToBuild })),
        (err: Error) => {
          assert.ok(err instanceof DownloadRejected, String(err));
          assert.match(
            err.message,
            new RegExp(
              `has sha256 ${sha256sum(helmArchive())}, not the sha256 ${published} published in ${base}${helmSumsPath}`,
            ),
          );
          assert.match(err.message, /nothing was installed/);
          return true;
        },
      );
      assertNothingInstalled(cache, 'helm');
    }
  });

  it('a pin and the published checksum file that disagree: refused in every mode, naming both, before the file is fetched', async () => {
    const pinned = sha256sum(helmArchive());
    const published = sha256sum(etcdArchive());
    host.routes.set(helmPath, { kind: 'file', path: helmArchive() });
    host.routes.set(helmSumsPath, { kind: 'text', body: `${published}  ${helmFile}\n` });
    for (const mode of ['download', 'auto'] as const) {
      const cache = await emptyCache();
      const from = host.paths.length;
      await assert.rejects(
        obtain(
          'helm',
          () => {},
          options({ mode, checksums: checksums({ helm: pinned }), build: refuseToBuild }),
        ),
        (err: Error) => {
          assert.ok(err instanceof DownloadRejected, String(err));
          assert.match(err.message, new RegExp(`the sha256 pinned in versions.ts is ${pinned}`));
          assert.match(
            err.message,
            new RegExp(`published checksum file ${base}${helmSumsPath} says ${published}`),
          );
          assert.match(err.fix, /one of the two is wrong/);
          return true;
        },
      );
      assert.deepEqual(host.paths.slice(from), [helmSumsPath], 'the release file itself is not fetched');
      assertNothingInstalled(cache, 'helm');
    }
  });

  for (const [label, body, why] of [
    ['missing (404)', undefined, /cannot be used: the server answered HTTP 404/],
    ['empty', '', /malformed, the file is empty/],
    ['a digest of 63 hex digits', `${'a'.repeat(63)}  HELM\n`, /malformed, line 1 is not/],
    [
      'two lines for our file',
      `${'a'.repeat(64)}  HELM\n${'a'.repeat(64)}  HELM\n`,
      /malformed, it has 2 lines for helm-/,
    ],
    [
      'a line for another file only',
      `${'a'.repeat(64)}  helm-${HELM_VERSION}-linux-arm64.tar.gz\n`,
      /malformed, it has no line for helm-/,
    ],
  ] as const) {
    it(`a published checksum file that is ${label} is "unavailable": download mode fails saying why, auto builds saying why`, async () => {
      host.routes.set(helmPath, { kind: 'file', path: helmArchive() });
      if (body === undefined) host.routes.delete(helmSumsPath);
      else host.routes.set(helmSumsPath, { kind: 'text', body: body.replaceAll('HELM', helmFile) });

      const cache = await emptyCache();
      const from = host.paths.length;
      await assert.rejects(
        obtain(
          'helm',
          () => {},
          options({ mode: 'download', checksums: checksums({}), build: refuseToBuild }),
        ),
        (err: Error) => {
          assert.ok(err instanceof DownloadUnavailable, String(err));
          assert.match(err.message, new RegExp(`published checksum file ${base}${helmSumsPath}`));
          assert.match(err.message, why);
          return true;
        },
      );
      assert.deepEqual(host.paths.slice(from), [helmSumsPath], 'nothing unverifiable is fetched');
      assertNothingInstalled(cache, 'helm');

      await emptyCache();
      const lines: string[] = [];
      const builder = recordingBuilder();
      await obtain(
        'helm',
        (m) => lines.push(m),
        options({ mode: 'auto', checksums: checksums({}), build: builder.build }),
      );
      assert.equal(builder.built(), 1);
      const said = lines.filter((l) => l.includes('building from source'));
      assert.equal(said.length, 1, lines.join('\n'));
      assert.match(said[0] as string, why);
    });
  }

  it('`controlplane checksums` fetches each official file through the mirror variables and prints its sha256', async () => {
    host.routes.clear();
    host.fallback = helmArchive();
    const from = host.paths.length;
    try {
      // Asynchronously: the stand-in host answers from this process's event loop.
      const { stdout: out } = await execFileP(
        process.execPath,
        [join(import.meta.dirname, '..', 'src', 'cli.ts'), 'checksums'],
        {
          encoding: 'utf8',
          env: {
            ...process.env,
            KUBE_OPERATORS_KUBERNETES_RELEASES: base,
            KUBE_OPERATORS_ETCD_RELEASES: `${base}/etcd`,
            KUBE_OPERATORS_HELM_RELEASES: `${base}/helm/`,
            KUBE_OPERATORS_PROMETHEUS_RELEASES: `${base}/prometheus`,
          },
        },
      );
      const sum = sha256sum(helmArchive());
      const lines = out.split('\n').filter((l) => l.includes("'linux/"));
      // Six binaries of the plane and tools, three of the node, two platforms each.
      assert.equal(lines.length, 18, out);
      for (const l of lines) assert.match(l, new RegExp(`'linux/(amd|arm)64': '${sum}', // ${base}/`));
      const asked = host.paths.slice(from);
      assert.ok(
        asked.includes(`/${KUBERNETES_VERSION}/bin/linux/arm64/kube-controller-manager`),
        asked.join('\n'),
      );
      assert.ok(asked.includes(`/${KUBERNETES_VERSION}/bin/linux/amd64/kubelet`), asked.join('\n'));
      assert.ok(
        asked.includes(`/etcd/${ETCD_VERSION}/etcd-${ETCD_VERSION}-linux-amd64.tar.gz`),
        asked.join('\n'),
      );
      assert.ok(asked.includes(`/helm/helm-${HELM_VERSION}-linux-arm64.tar.gz`), asked.join('\n'));
      assert.ok(
        asked.some((p) =>
          /^\/prometheus\/v3\.\d+\.\d+\/prometheus-3\.\d+\.\d+\.linux-amd64\.tar\.gz$/.test(p),
        ),
        asked.join('\n'),
      );
    } finally {
      host.fallback = undefined;
    }
  });

  it('KUBE_OPERATORS_BINARIES accepts auto, download, pinned and build, and names a typo', () => {
    assert.equal(binariesMode({}), 'auto');
    assert.equal(binariesMode({ KUBE_OPERATORS_BINARIES: 'download' }), 'download');
    assert.equal(binariesMode({ KUBE_OPERATORS_BINARIES: 'pinned' }), 'pinned');
    assert.equal(binariesMode({ KUBE_OPERATORS_BINARIES: 'build' }), 'build');
    assert.throws(
      () => binariesMode({ KUBE_OPERATORS_BINARIES: 'dowload' }),
      /KUBE_OPERATORS_BINARIES is "dowload"/,
    );
  });
});
