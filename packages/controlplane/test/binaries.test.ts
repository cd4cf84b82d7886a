/**
 * Finding and building the binaries: a warm cache answers at once, and every way the
 * first build can fail names its cause and its fix.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { resolveBinaries, stagingModules } from '../src/binaries.ts';
import { ControlPlane } from '../src/controlplane.ts';
import { ControlPlaneError } from '../src/errors.ts';
import { classifyGoFailure, downloadModule } from '../src/go.ts';
import { KUBERNETES_VERSION } from '../src/versions.ts';

/** Runs `fn` with some environment variables replaced, restoring them after. */
async function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(vars)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

describe('binaries', () => {
  it('a warm cache resolves all six binaries in well under a second', async () => {
    await resolveBinaries(() => {});
    const started = performance.now();
    const b = await resolveBinaries(() => assert.fail('a warm cache must not build'));
    assert.ok(performance.now() - started < 1_000);
    assert.deepEqual(Object.keys(b).sort(), [
      'etcd',
      'helm',
      'kubeApiserver',
      'kubeControllerManager',
      'kubectl',
      'promtool',
    ]);
    for (const p of Object.values(b)) {
      assert.match(p ?? 'missing', /\/(kube-apiserver|kube-controller-manager|etcd|kubectl|helm|promtool)$/);
    }
  });

  it(`reads the ${KUBERNETES_VERSION} staging modules from kubernetes' own go.mod (33 for 1.36)`, async () => {
    const k8s = await downloadModule('k8s.io/kubernetes', KUBERNETES_VERSION, tmpdir());
    const staging = stagingModules(await readFile(k8s.goMod, 'utf8'));
    assert.equal(staging.length, 33);
    for (const m of [
      'k8s.io/api',
      'k8s.io/apimachinery',
      'k8s.io/apiserver',
      'k8s.io/client-go',
      'k8s.io/streaming',
    ]) {
      assert.ok(staging.includes(m), m);
    }
  });

  it('without KUBEBUILDER_ASSETS, a cold cache and no Go toolchain, says to install Go or set KUBEBUILDER_ASSETS', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'cold-cache-'));
    try {
      await withEnv(
        { KUBE_OPERATORS_CACHE: empty, KUBEBUILDER_ASSETS: undefined, PATH: '/nonexistent' },
        async () => {
          await assert.rejects(
            resolveBinaries(() => {}),
            (err: unknown) => {
              assert.ok(err instanceof ControlPlaneError, String(err));
              assert.match(err.message, /Go toolchain is not on PATH/);
              assert.match(err.fix, /KUBEBUILDER_ASSETS/);
              return true;
            },
          );
        },
      );
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('an unreachable module proxy is named as such, with GOPROXY in the fix', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'cold-cache-'));
    try {
      await withEnv(
        {
          KUBE_OPERATORS_CACHE: empty,
          KUBEBUILDER_ASSETS: undefined,
          GOMODCACHE: join(empty, 'mod'),
          GOPROXY: 'http://127.0.0.1:9',
          GOSUMDB: 'off',
        },
        async () => {
          await assert.rejects(
            resolveBinaries(() => {}),
            (err: unknown) => {
              assert.ok(err instanceof ControlPlaneError, String(err));
              assert.match(err.message, /module proxy cannot be reached/);
              assert.match(err.fix, /GOPROXY/);
              return true;
            },
          );
        },
      );
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('KUBEBUILDER_ASSETS naming a missing folder is refused with the variable named', async () => {
    await withEnv({ KUBEBUILDER_ASSETS: '/nonexistent/assets' }, async () => {
      await assert.rejects(
        resolveBinaries(() => {}),
        /KUBEBUILDER_ASSETS names \/nonexistent\/assets/,
      );
    });
  });

  it('a plane starts on a machine that has no helm or promtool yet, building and waiting for neither', async () => {
    const real = await resolveBinaries(() => {});
    const cache = await mkdtemp(join(tmpdir(), 'cold-cache-'));
    const assets = await mkdtemp(join(tmpdir(), 'plane-assets-'));
    try {
      for (const [name, path] of [
        ['kube-apiserver', real.kubeApiserver],
        ['kube-controller-manager', real.kubeControllerManager],
        ['etcd', real.etcd],
        ['kubectl', real.kubectl],
      ] as const) {
        await symlink(path ?? assert.fail(`no ${name}`), join(assets, name));
      }
      const logs: string[] = [];
      // No Go and nothing cached: anything the plane tried to obtain beyond its four
      // binaries would fail (build mode, no toolchain) instead of starting.
      await withEnv(
        {
          KUBE_OPERATORS_CACHE: cache,
          KUBEBUILDER_ASSETS: assets,
          KUBE_OPERATORS_BINARIES: 'build',
          PATH: '/nonexistent',
        },
        async () => {
          const plane = await ControlPlane.start({ controllerManager: true, log: (m) => logs.push(m) });
          try {
            await plane.checkControllerManager();
            assert.deepEqual(Object.keys(plane.binaries).sort(), [
              'etcd',
              'kubeApiserver',
              'kubeControllerManager',
              'kubectl',
            ]);
          } finally {
            await plane.stop();
          }
        },
      );
      assert.equal(
        logs.find((l) => /helm|promtool|build/.test(l)),
        undefined,
        'the plane mentioned a tool it does not run',
      );
      assert.equal(existsSync(join(cache, 'bin')), false, 'the plane put something in the binary cache');
    } finally {
      await rm(cache, { recursive: true, force: true });
      await rm(assets, { recursive: true, force: true });
    }
  });

  it('classifies the toolchain failures it cannot provoke here from their own words', () => {
    const cases: [string, RegExp][] = [
      ['go: k8s.io/kubernetes@v1.99.0: reading https://proxy/...: 404 Not Found', /does not serve a module/],
      [
        'go: module x requires go >= 1.30.0 (running go 1.26.8; GOTOOLCHAIN=local)',
        /older than the module requires/,
      ],
      ['write /root/.cache/go-build/ab: no space left on device', /disk is full/],
      ['./main.go:3:2: undefined: foo', /failed with exit code 1/],
    ];
    for (const [stderr, expected] of cases) {
      const err = classifyGoFailure('building x', ['build', 'x'], stderr, 1, null);
      assert.match(err.message, expected, stderr);
      assert.ok(err.fix.length > 10);
    }
  });
});
