/**
 * CRD installation for anything that starts operators against a plane: `npm run up`,
 * the operators' local runners and the tests (testing.ts re-exports it). Not test
 * support: product code imports it from `@operators/controlplane`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiErrorReason, isApiError, type KubeClient, type KubeObject } from '@operators/kit';
import type { CrdDocument } from './third-party-crds.ts';

/**
 * Server-side applies each CRD (large ones such as Cilium's exceed the 256 KB
 * last-applied annotation of a client-side apply) and waits for `Established`.
 */
export async function installCrds(client: KubeClient, crds: readonly KubeObject[]): Promise<void> {
  await Promise.all(
    crds.map((crd) =>
      client.apply(
        {
          ...crd,
          // Keep annotations: groups under k8s.io need `api-approved.kubernetes.io`.
          metadata: {
            name: crd.metadata.name,
            labels: crd.metadata.labels,
            annotations: crd.metadata.annotations,
          },
        },
        { fieldManager: 'kube-operators-ts-tests', force: true },
      ),
    ),
  );
  const deadline = Date.now() + 60_000;
  for (const crd of crds) {
    const name = crd.metadata.name ?? '';
    for (;;) {
      const live = await client.get<
        KubeObject & { status?: { conditions?: { type: string; status: string }[] } }
      >({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' }, name);
      if (live.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} was not Established within 60 s`);
      await sleep(50);
    }
    // Established is not yet served: discovery follows a moment later. Wait for it, so
    // that the caller's first request does not race the apiserver's discovery.
    const spec = (crd as unknown as CrdDocument).spec;
    for (const v of spec.versions.filter((x) => x.served)) {
      const apiVersion = `${spec.group}/${v.name}`;
      for (;;) {
        client.discovery.invalidate(apiVersion);
        try {
          await client.resolve({ apiVersion, kind: spec.names.kind });
          break;
        } catch (err) {
          if (!isApiError(err, ApiErrorReason.NotFound) || Date.now() > deadline) throw err;
          await sleep(50);
        }
      }
    }
  }
}
