/**
 * ClusterProvider and GitProvider readiness: what an owner can fix on the object itself
 * (a superseded field stored, a kubeconfig that does not parse or is refused, a missing
 * credential Secret). Remote connectivity is reported where it bites: on each GitTarget
 * whose pushes fail. Both are looked at every minute besides their own events, since
 * the Secrets they read send no event here.
 */
import { type Clock, type Controller, type Manager, realClock } from '@operators/kit';
import { CLUSTER_PROVIDER, type ClusterProvider } from '../api/cluster-provider.ts';
import { GIT_PROVIDER, type GitProvider } from '../api/git-provider.ts';
import { supersededFieldRefusal } from '../domain/authz/index.ts';
import { Reason } from '../domain/reasons.ts';
import type { CompileReads } from '../mirror/compile.ts';
import { publish } from './status.ts';

const RESYNC_MS = 60_000;

export function addClusterProviderController(
  manager: Manager,
  reads: CompileReads,
  opts: { clock?: Clock } = {},
): Controller<ClusterProvider> {
  const deps = { client: manager.client, recorder: manager.recorder, clock: opts.clock ?? realClock };
  return manager
    .controller('clusterprovider')
    .for<ClusterProvider>(CLUSTER_PROVIDER)
    .reconcile(async (req) => {
      const cp = req.object as ClusterProvider | undefined;
      if (!cp) return {};
      const superseded = supersededFieldRefusal('ClusterProvider', { name: cp.metadata.name ?? '' }, cp.spec);
      if (superseded && !superseded.allowed) {
        await publish(deps, CLUSTER_PROVIDER, cp, {
          kind: 'not-ready',
          reason: superseded.reason,
          message: superseded.message,
          stalled: true,
        });
        return { requeueAfterMs: RESYNC_MS };
      }
      const source = await reads.sourceClient(cp);
      if (!source.ok) {
        await publish(deps, CLUSTER_PROVIDER, cp, {
          kind: 'not-ready',
          reason: Reason.KubeConfigInvalid,
          message: source.message,
          stalled: false,
        });
        return { requeueAfterMs: RESYNC_MS };
      }
      const names = cp.spec.accessFrom?.names?.length ?? 0;
      const where = cp.spec.kubeConfig
        ? `the cluster of Secret "${cp.spec.kubeConfig.secretRef.name}"`
        : "the operator's own cluster";
      const message =
        !cp.spec.accessFrom || (names === 0 && cp.spec.accessFrom.selector === undefined)
          ? `reads ${where}; spec.accessFrom admits no namespace yet (deny by default)`
          : `reads ${where}`;
      await publish(deps, CLUSTER_PROVIDER, cp, { kind: 'ready', reason: Reason.Ready, message });
      return { requeueAfterMs: RESYNC_MS };
    });
}

export function addGitProviderController(
  manager: Manager,
  reads: CompileReads,
  opts: { clock?: Clock } = {},
): Controller<GitProvider> {
  const deps = { client: manager.client, recorder: manager.recorder, clock: opts.clock ?? realClock };
  return manager
    .controller('gitprovider')
    .for<GitProvider>(GIT_PROVIDER)
    .reconcile(async (req) => {
      const p = req.object as GitProvider | undefined;
      if (!p) return {};
      const superseded = supersededFieldRefusal(
        'GitProvider',
        { ...(p.metadata.namespace ? { namespace: p.metadata.namespace } : {}), name: p.metadata.name ?? '' },
        p.spec,
      );
      if (superseded && !superseded.allowed) {
        await publish(deps, GIT_PROVIDER, p, {
          kind: 'not-ready',
          reason: superseded.reason,
          message: superseded.message,
          stalled: true,
        });
        return { requeueAfterMs: RESYNC_MS };
      }
      const ns = p.metadata.namespace ?? '';
      const missing: string[] = [];
      for (const ref of [p.spec.secretRef?.name, p.spec.knownHostsRef?.name]) {
        if (ref && !(await reads.secret(ns, ref)))
          missing.push(`Secret "${ref}" does not exist in namespace "${ns}"`);
      }
      if (missing.length > 0) {
        await publish(deps, GIT_PROVIDER, p, {
          kind: 'not-ready',
          reason: Reason.CredentialsNotFound,
          message: missing.join('; '),
          stalled: false,
        });
        return { requeueAfterMs: RESYNC_MS };
      }
      await publish(deps, GIT_PROVIDER, p, {
        kind: 'ready',
        reason: Reason.Ready,
        message: `${p.spec.url}, branches ${p.spec.allowedBranches.join(', ')}`,
      });
      return { requeueAfterMs: RESYNC_MS };
    });
}
