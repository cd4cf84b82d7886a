/**
 * Where the official release files are: the URLs are written out here by hand from the
 * projects' download pages, so a change of layout in the code shows up as a failure.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { releaseBase, releasePlan } from '../src/releases.ts';
import { RELEASE_SHA256 } from '../src/versions.ts';

describe('release files', () => {
  it('the official URLs and archive members of every pinned version, for linux/amd64', () => {
    const all = Object.fromEntries(
      Object.keys(RELEASE_SHA256).map((k) => [
        k,
        { 'linux/amd64': 'a'.repeat(64), 'linux/arm64': 'b'.repeat(64) },
      ]),
    ) as unknown as typeof RELEASE_SHA256;
    const files = (['kubernetes', 'etcd', 'helm', 'promtool'] as const).flatMap((c) => {
      const plan = releasePlan(c, 'linux/amd64', releaseBase(c, {}), all);
      assert.equal(plan.kind, 'download');
      return plan.kind === 'download' ? plan.files.map((f) => [f.url, f.member ?? '']) : [];
    });
    assert.deepEqual(files, [
      ['https://dl.k8s.io/release/v1.36.3/bin/linux/amd64/kube-apiserver', ''],
      ['https://dl.k8s.io/release/v1.36.3/bin/linux/amd64/kube-controller-manager', ''],
      ['https://dl.k8s.io/release/v1.36.3/bin/linux/amd64/kubectl', ''],
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

  it('a mirror variable replaces the host and keeps the official tree below it', () => {
    const base = releaseBase('helm', { KUBE_OPERATORS_HELM_RELEASES: 'https://mirror.example/helm/' });
    assert.equal(base, 'https://mirror.example/helm');
    const plan = releasePlan('helm', 'linux/arm64', base);
    assert.equal(plan.kind, 'download');
    if (plan.kind === 'download') {
      assert.equal(plan.files[0]?.url, 'https://mirror.example/helm/helm-v3.22.0-linux-arm64.tar.gz');
      assert.equal(plan.files[0]?.sha256, 'f14e804dfee240f55525b667488fe9adca349e63e00c9af634c0beb1421ac310');
    }
  });

  it('a group with any binary unpinned for the platform is not downloaded at all, and says which', () => {
    const plan = releasePlan('kubernetes', 'linux/amd64');
    // kubectl alone is pinned for 1.36.3: the other two are named.
    assert.deepEqual(plan, { kind: 'unpinned', missing: ['kube-apiserver', 'kube-controller-manager'] });
    assert.equal(releasePlan('helm', 'darwin/arm64').kind, 'unpinned');
    assert.equal(releasePlan('etcd', undefined).kind, 'unpinned');
  });

  it('every pinned checksum is 64 lowercase hex digits', () => {
    for (const [binary, byPlatform] of Object.entries(RELEASE_SHA256)) {
      for (const [platform, sum] of Object.entries(byPlatform)) {
        assert.match(sum as string, /^[0-9a-f]{64}$/, `${binary} ${platform}`);
      }
    }
  });
});
