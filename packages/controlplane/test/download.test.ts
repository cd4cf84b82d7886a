/**
 * The download path to the binaries, against a local HTTP server standing in for the
 * release hosts (dl.k8s.io, GitHub's release downloads, get.helm.sh). The stand-in serves
 * files laid out as the official releases are, made by this test from the binaries in the
 * cache, with checksums computed by coreutils' `sha256sum` (not by the code under test).
 * Every failure must end in one clear error or the documented fallback, and never in a
 * half-installed binary.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { type Builder, binariesMode, type ObtainOptions, obtain, resolveBinaries } from '../src/binaries.ts';
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
    if (route.kind === 'redirect') {
      res.writeHead(302, { location: route.to }).end();
      return;
    }
    if (route.kind === 'close') {
      res.writeHead(200, { connection: 'close', 'content-type': 'application/octet-stream' });
      res.end(readFileSync(route.path));
      return;
    }
    const body = readFileSync(route.path);
    res.writeHead(200, { 'content-length': body.length, 'content-type': 'application/octet-stream' });
    if (route.kind === 'file') {
      res.end(body);
      return;
    }
    res.write(body.subarray(0, Math.floor(body.length / 2)), () => res.socket?.destroy());
  }
}

/** No checksum pinned anywhere: each test adds the ones it serves. */
function checksums(extra: Partial<Record<keyof Checksums, string>>): Checksums {
  const out: Record<string, Record<string, string>> = {};
  for (const k of Object.keys(RELEASE_SHA256)) out[k] = {};
  for (const [k, v] of Object.entries(extra)) if (v) out[k] = { [PLATFORM]: v };
  return out as unknown as Checksums;
}

describe('binaries: the download path, against a stand-in release host', () => {
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

  const helmPath = `/helm-${HELM_VERSION}-linux-amd64.tar.gz`;
  const options = (extra: ObtainOptions): ObtainOptions => ({
    platform: PLATFORM,
    bases: { helm: base, etcd: base, kubernetes: base },
    connectTimeoutMs: 1_000,
    stallTimeoutMs: 1_000,
    ...extra,
  });
  const refuseToBuild: Builder = async () => assert.fail('this path must not build');

  it('a good archive is downloaded, verified, unpacked into the cache, and runs', async () => {
    const cache = await emptyCache();
    host.routes.set(helmPath, { kind: 'file', path: helmArchive() });
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
      lines.some((l) => /downloaded helm: [\d.]+ MB in [\d.]+ s \([\d.]+ MB\/s\), sha256 verified/.test(l)),
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

  it('raw release binaries (the Kubernetes layout) and an etcd archive install and run', async (t) => {
    const cache = await emptyCache();
    const sums: Partial<Record<keyof Checksums, string>> = { etcd: sha256sum(etcdArchive()) };
    for (const [name, path] of [
      ['kube-apiserver', real.kubeApiserver],
      ['kube-controller-manager', real.kubeControllerManager as string],
      ['kubectl', real.kubectl],
    ] as const) {
      host.routes.set(`/${KUBERNETES_VERSION}/bin/linux/amd64/${name}`, { kind: 'file', path });
      sums[name] = sha256sum(path);
    }
    host.routes.set(`/${ETCD_VERSION}/etcd-${ETCD_VERSION}-linux-amd64.tar.gz`, {
      kind: 'file',
      path: etcdArchive(),
    });
    const opts = options({ mode: 'download', checksums: checksums(sums), build: refuseToBuild });
    const started = Date.now();
    const k8s = await obtain('kubernetes', () => {}, opts);
    const etcd = await obtain('etcd', () => {}, opts);
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
            new RegExp(`has sha256 ${sha256sum(helmArchive())}, not the pinned ${wrong}`),
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

  it('with no checksum pinned for the platform, auto builds and says so, and download mode refuses', async () => {
    await emptyCache();
    const lines: string[] = [];
    let built = 0;
    const before = host.requests;
    const fakeBuilder: Builder = async (_c, version, dest) => {
      built++;
      mkdirSync(dest, { recursive: true });
      await writeFile(join(dest, 'helm'), `#!/bin/sh\necho ${version}\n`, { mode: 0o755 });
    };
    await obtain(
      'helm',
      (m) => lines.push(m),
      options({ mode: 'auto', checksums: checksums({}), build: fakeBuilder }),
    );
    assert.equal(built, 1);
    assert.equal(host.requests, before, 'nothing unverifiable is fetched');
    assert.ok(
      lines.some((l) =>
        /building from source, not downloading: no sha256 pinned in versions.ts for helm on linux\/amd64/.test(
          l,
        ),
      ),
    );

    await emptyCache();
    await assert.rejects(
      obtain('helm', () => {}, options({ mode: 'download', checksums: checksums({}), build: refuseToBuild })),
      /KUBE_OPERATORS_BINARIES=download, and there is no sha256 pinned/,
    );
  });

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
      assert.equal(lines.length, 12, out);
      for (const l of lines) assert.match(l, new RegExp(`'linux/(amd|arm)64': '${sum}', // ${base}/`));
      const asked = host.paths.slice(from);
      assert.ok(
        asked.includes(`/${KUBERNETES_VERSION}/bin/linux/arm64/kube-controller-manager`),
        asked.join('\n'),
      );
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

  it('KUBE_OPERATORS_BINARIES accepts auto, download and build, and names a typo', () => {
    assert.equal(binariesMode({}), 'auto');
    assert.equal(binariesMode({ KUBE_OPERATORS_BINARIES: 'download' }), 'download');
    assert.equal(binariesMode({ KUBE_OPERATORS_BINARIES: 'build' }), 'build');
    assert.throws(
      () => binariesMode({ KUBE_OPERATORS_BINARIES: 'dowload' }),
      /KUBE_OPERATORS_BINARIES is "dowload"/,
    );
  });
});
