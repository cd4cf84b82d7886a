/**
 * Where the official release files are: the URLs are written out here by hand from the
 * projects' download pages, so a change of layout in the code shows up as a failure.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Checksums, releaseBase, releasePlan } from '../src/releases.ts';
import { RELEASE_SHA256 } from '../src/versions.ts';

describe('release files', () => {
  it('the official URLs and archive members of every pinned version, for linux/amd64', () => {
    const all = Object.fromEntries(
      Object.keys(RELEASE_SHA256).map((k) => [
        k,
        { 'linux/amd64': 'a'.repeat(64), 'linux/arm64': 'b'.repeat(64) },
      ]),
    ) as unknown as typeof RELEASE_SHA256;
    const files = (['kubernetes', 'kubernetes-node', 'etcd', 'helm', 'promtool'] as const).flatMap((c) => {
      const plan = releasePlan(c, 'linux/amd64', releaseBase(c, {}), all);
      assert.equal(plan.kind, 'download');
      return plan.kind === 'download' ? plan.files.map((f) => [f.url, f.member ?? '']) : [];
    });
    assert.deepEqual(files, [
      ['https://dl.k8s.io/release/v1.36.3/bin/linux/amd64/kube-apiserver', ''],
      ['https://dl.k8s.io/release/v1.36.3/bin/linux/amd64/kube-controller-manager', ''],
      ['https://dl.k8s.io/release/v1.36.3/bin/linux/amd64/kubectl', ''],
      ['https://dl.k8s.io/release/v1.36.3/bin/linux/amd64/kubelet', ''],
      ['https://dl.k8s.io/release/v1.36.3/bin/linux/amd64/kube-proxy', ''],
      ['https://dl.k8s.io/release/v1.36.3/bin/linux/amd64/kube-scheduler', ''],
      [
        'https://github.com/etcd-io/etcd/releases/download/v3.6.16/etcd-v3.6.16-linux-amd64.tar.gz',
        'etcd-v3.6.16-linux-amd64/etcd',
      ],
      ['https://get.helm.sh/helm-v3.22.0-linux-amd64.tar.gz', 'linux-amd64/helm'],
      [
        'https://github.com/prometheus/prometheus/releases/download/v3.16.0/prometheus-3.16.0.linux-amd64.tar.gz',
        'prometheus-3.16.0.linux-amd64/promtool',
      ],
    ]);
  });

  it("with no pin, each file is checked against its release's published checksum file, at the official path", () => {
    const none = Object.fromEntries(Object.keys(RELEASE_SHA256).map((k) => [k, {}])) as unknown as Checksums;
    const trusts = (['kubernetes', 'kubernetes-node', 'etcd', 'helm', 'promtool'] as const).flatMap((c) => {
      const plan = releasePlan(c, 'linux/amd64', releaseBase(c, {}), none);
      assert.equal(plan.kind, 'download');
      return plan.kind === 'download' ? plan.files.map((f) => f.trust) : [];
    });
    const k8s = 'https://dl.k8s.io/release/v1.36.3/bin/linux/amd64';
    const etcd = 'https://github.com/etcd-io/etcd/releases/download/v3.6.16';
    const prom = 'https://github.com/prometheus/prometheus/releases/download/v3.16.0';
    assert.deepEqual(trusts, [
      {
        kind: 'published',
        checksumUrl: `${k8s}/kube-apiserver.sha256`,
        format: 'bare-digest',
        fileName: 'kube-apiserver',
      },
      {
        kind: 'published',
        checksumUrl: `${k8s}/kube-controller-manager.sha256`,
        format: 'bare-digest',
        fileName: 'kube-controller-manager',
      },
      { kind: 'published', checksumUrl: `${k8s}/kubectl.sha256`, format: 'bare-digest', fileName: 'kubectl' },
      { kind: 'published', checksumUrl: `${k8s}/kubelet.sha256`, format: 'bare-digest', fileName: 'kubelet' },
      {
        kind: 'published',
        checksumUrl: `${k8s}/kube-proxy.sha256`,
        format: 'bare-digest',
        fileName: 'kube-proxy',
      },
      {
        kind: 'published',
        checksumUrl: `${k8s}/kube-scheduler.sha256`,
        format: 'bare-digest',
        fileName: 'kube-scheduler',
      },
      {
        kind: 'published',
        checksumUrl: `${etcd}/SHA256SUMS`,
        format: 'sha256sum-lines',
        fileName: 'etcd-v3.6.16-linux-amd64.tar.gz',
      },
      {
        kind: 'published',
        checksumUrl: 'https://get.helm.sh/helm-v3.22.0-linux-amd64.tar.gz.sha256sum',
        format: 'sha256sum-lines',
        fileName: 'helm-v3.22.0-linux-amd64.tar.gz',
      },
      {
        kind: 'published',
        checksumUrl: `${prom}/sha256sums.txt`,
        format: 'sha256sum-lines',
        fileName: 'prometheus-3.16.0.linux-amd64.tar.gz',
      },
    ]);
  });

  it("the node's kubelet, kube-proxy and kube-scheduler come from dl.k8s.io beside the apiserver, each checked against its .sha256, through the same mirror variable", () => {
    const plan = releasePlan('kubernetes-node', 'linux/amd64', releaseBase('kubernetes-node', {}));
    const k8s = 'https://dl.k8s.io/release/v1.36.3/bin/linux/amd64';
    const file = (binary: string) => ({
      binary,
      trust: {
        kind: 'published',
        checksumUrl: `${k8s}/${binary}.sha256`,
        format: 'bare-digest',
        fileName: binary,
      },
      url: `${k8s}/${binary}`,
    });
    assert.deepEqual(plan, {
      kind: 'download',
      files: [file('kubelet'), file('kube-proxy'), file('kube-scheduler')],
    });
    const mirror = { KUBE_OPERATORS_KUBERNETES_RELEASES: 'https://mirror.example/k8s/' };
    assert.equal(releaseBase('kubernetes-node', mirror), 'https://mirror.example/k8s');
    assert.equal(releaseBase('kubernetes', mirror), 'https://mirror.example/k8s');
  });

  it("a mirror variable replaces the host and keeps the official tree below it, the release's checksum files included", () => {
    const base = releaseBase('helm', { KUBE_OPERATORS_HELM_RELEASES: 'https://mirror.example/helm/' });
    assert.equal(base, 'https://mirror.example/helm');
    const plan = releasePlan('helm', 'linux/arm64', base);
    assert.equal(plan.kind, 'download');
    if (plan.kind === 'download') {
      assert.equal(plan.files[0]?.url, 'https://mirror.example/helm/helm-v3.22.0-linux-arm64.tar.gz');
      // The pin wins; the published file is read beside it as a cross-check.
      assert.deepEqual(plan.files[0]?.trust, {
        kind: 'pinned',
        sha256: 'f14e804dfee240f55525b667488fe9adca349e63e00c9af634c0beb1421ac310',
        crossCheck: {
          checksumUrl: 'https://mirror.example/helm/helm-v3.22.0-linux-arm64.tar.gz.sha256sum',
          format: 'sha256sum-lines',
          fileName: 'helm-v3.22.0-linux-arm64.tar.gz',
        },
      });
    }
  });

  it('pins and published files mix within a group: kubectl pinned, the other two published', () => {
    const plan = releasePlan('kubernetes', 'linux/amd64');
    assert.equal(plan.kind, 'download');
    if (plan.kind === 'download') {
      assert.deepEqual(
        plan.files.map((f) => [f.binary, f.trust.kind]),
        [
          ['kube-apiserver', 'published'],
          ['kube-controller-manager', 'published'],
          ['kubectl', 'pinned'],
        ],
      );
    }
  });

  it('KUBE_OPERATORS_BINARIES=pinned: a group with any binary unpinned is not downloaded at all, and says which', () => {
    const plan = releasePlan(
      'kubernetes',
      'linux/amd64',
      releaseBase('kubernetes', {}),
      RELEASE_SHA256,
      'pinned-only',
    );
    assert.deepEqual(plan, {
      kind: 'unverifiable',
      missing: ['kube-apiserver', 'kube-controller-manager'],
      why:
        'no sha256 pinned in versions.ts for kube-apiserver, kube-controller-manager on linux/amd64 ' +
        '(KUBE_OPERATORS_BINARIES=pinned reads no published checksum file)',
    });
    const helm = releasePlan('helm', 'linux/amd64', releaseBase('helm', {}), RELEASE_SHA256, 'pinned-only');
    assert.equal(helm.kind === 'download' && helm.files[0]?.trust.kind, 'pinned');
    assert.equal(
      helm.kind === 'download' && helm.files[0]?.trust.kind === 'pinned' && helm.files[0].trust.crossCheck,
      undefined,
    );
  });

  it('etcd on macOS (its release has only .zip files there) and an unknown platform have nothing to verify against', () => {
    assert.equal(releasePlan('etcd', 'darwin/arm64').kind, 'unverifiable');
    assert.equal(releasePlan('helm', 'darwin/arm64').kind, 'download');
    assert.equal(releasePlan('etcd', undefined).kind, 'unverifiable');
  });

  it('every pinned checksum is 64 lowercase hex digits', () => {
    for (const [binary, byPlatform] of Object.entries(RELEASE_SHA256)) {
      for (const [platform, sum] of Object.entries(byPlatform)) {
        assert.match(sum as string, /^[0-9a-f]{64}$/, `${binary} ${platform}`);
      }
    }
  });
});
