/**
 * Issue 16, "Charts point at the images": every chart of the repository, rendered by the real
 * `helm template`, runs our images by the names the image catalog publishes, at the operator's
 * package.json version (or pinned by digest), and every workload (helm tests included) runs
 * non-root with a read-only root filesystem, no privilege escalation and no capability.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { resolveBinaries } from '@operators/controlplane';
import type { KubeObject } from '@operators/kit';
import { IMAGE_REGISTRY, IMAGE_USER, IMAGES } from '../../../packages/images/src/catalog.ts';
import { type RenderedChart, renderChart } from './chart-support.ts';

const OPERATORS = join(import.meta.dirname, '..', '..');

/** The independent oracle: each chart's images of ours, by catalog name, with the values that render them. */
const CHARTS: { operator: string; images: string[]; values: Record<string, unknown> }[] = [
  { operator: 'weebo-link', images: ['weebo-link'], values: {} },
  {
    operator: 'exoledge',
    images: ['exoledge-operator', 'exoledge-bridge'],
    values: { bridge: { enabled: true, directoryConfigMap: 'console-directory' } },
  },
  { operator: 'terdut', images: ['terdut-operator'], values: {} },
  { operator: 'gitops-reverser', images: ['gitops-reverser'], values: {} },
  { operator: 'permissions', images: ['permissions-operator'], values: {} },
];

/** Third-party images a chart runs: hardened the same, but not named after the catalog. */
const THIRD_PARTY = [/^docker\.io\/valkey\/valkey:/, /^registry\.k8s\.io\/kubectl:/];

const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;
const WORKLOADS = new Set(['Deployment', 'StatefulSet', 'Job', 'Pod', 'DaemonSet']);

interface Container {
  name: string;
  image: string;
  command?: unknown;
  securityContext?: unknown;
}
interface PodSpec {
  securityContext?: unknown;
  containers: Container[];
  initContainers?: Container[];
}

function podSpecs(r: RenderedChart): { owner: string; spec: PodSpec }[] {
  return [...r.objects, ...r.tests]
    .filter((o) => WORKLOADS.has(o.kind ?? ''))
    .map((o: KubeObject) => {
      const spec = (
        o.kind === 'Pod' ? o.spec : (o.spec as { template: { spec: unknown } }).template.spec
      ) as PodSpec;
      return { owner: `${o.kind}/${o.metadata.name}`, spec };
    });
}

function containers(r: RenderedChart): { owner: string; c: Container }[] {
  return podSpecs(r).flatMap(({ owner, spec }) =>
    [...(spec.initContainers ?? []), ...spec.containers].map((c) => ({ owner: `${owner}/${c.name}`, c })),
  );
}

async function version(operator: string): Promise<string> {
  return (
    JSON.parse(await readFile(join(OPERATORS, operator, 'package.json'), 'utf8')) as { version: string }
  ).version;
}

function render(helm: string, operator: string, values: Record<string, unknown>): Promise<RenderedChart> {
  return renderChart(helm, {
    namespace: `${operator}-system`,
    release: operator,
    chartDir: join(OPERATORS, operator, 'chart'),
    values,
  });
}

let helm: string;
before(async () => {
  helm = (await resolveBinaries(() => {})).helm;
});

describe("the charts point at the project's images", () => {
  it("names only images of the catalog, under the project's registry", () => {
    const catalog = new Set(IMAGES.map((i) => i.name));
    for (const { images } of CHARTS) for (const name of images) assert.ok(catalog.has(name), name);
    assert.equal(IMAGE_REGISTRY, 'ghcr.io/kube-operators-ts');
    assert.equal(IMAGE_USER, 65532);
  });

  for (const { operator, images, values } of CHARTS) {
    it(`the ${operator} chart's appVersion is the operator's package.json version`, async () => {
      const chart = await readFile(join(OPERATORS, operator, 'chart', 'Chart.yaml'), 'utf8');
      assert.match(
        chart,
        new RegExp(`^appVersion: "${(await version(operator)).replaceAll('.', '\\.')}"$`, 'm'),
      );
    });

    it(`every container of the ${operator} chart runs as 65532 with a read-only root and no capabilities`, async () => {
      const r = await render(helm, operator, values);
      const pods = podSpecs(r);
      assert.ok(pods.length > 0);
      for (const { owner, spec } of pods) {
        const images = [...(spec.initContainers ?? []), ...spec.containers].map((c) => c.image);
        const uid = images.some((i) => i.startsWith('docker.io/valkey/valkey:')) ? 999 : 65532;
        assert.deepEqual(
          spec.securityContext,
          { runAsNonRoot: true, runAsUser: uid, runAsGroup: uid, seccompProfile: { type: 'RuntimeDefault' } },
          owner,
        );
      }
      for (const { owner, c } of containers(r)) {
        assert.deepEqual(
          c.securityContext,
          { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
          owner,
        );
      }
    });

    it(`the ${operator} chart runs ${images.join(', ')} from ghcr.io/kube-operators-ts at the package.json version, by the entrypoint`, async () => {
      const v = await version(operator);
      const r = await render(helm, operator, values);
      const ours = containers(r).filter(({ c }) => !THIRD_PARTY.some((p) => p.test(c.image)));
      assert.deepEqual(
        [...new Set(ours.map(({ c }) => c.image))].sort(),
        images.map((n) => `ghcr.io/kube-operators-ts/${n}:${v}`).sort(),
      );
      for (const { owner, c } of ours)
        assert.equal(c.command, undefined, `${owner} overrides the entrypoint`);
    });

    it(`a digest pins the ${operator} chart's image as repository@digest, the tag ignored`, async () => {
      const pinned: Record<string, unknown> = { ...values, image: { digest: DIGEST, tag: 'ignored' } };
      if (operator === 'exoledge') {
        pinned.bridge = { ...(values.bridge as object), image: { digest: DIGEST } };
      }
      const r = await render(helm, operator, pinned);
      const ours = containers(r).filter(({ c }) => !THIRD_PARTY.some((p) => p.test(c.image)));
      assert.deepEqual(
        [...new Set(ours.map(({ c }) => c.image))].sort(),
        images.map((n) => `ghcr.io/kube-operators-ts/${n}@${DIGEST}`).sort(),
      );
    });

    it(`a malformed digest fails the ${operator} chart's render, saying what a digest must be`, async () => {
      for (const digest of ['sha256:abc', `sha256:${'A'.repeat(64)}`, `sha512:${'0'.repeat(64)}`, 'latest']) {
        await assert.rejects(
          render(helm, operator, { ...values, image: { digest } }),
          /is malformed: expected sha256: followed by 64 lowercase hex digits/,
          digest,
        );
      }
    });
  }

  it("a malformed digest of exoledge's bridge image fails the render", async () => {
    await assert.rejects(
      render(helm, 'exoledge', {
        bridge: { enabled: true, directoryConfigMap: 'd', image: { digest: 'sha256:0' } },
      }),
      /is malformed: expected sha256: followed by 64 lowercase hex digits/,
    );
  });
});
