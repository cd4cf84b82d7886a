/**
 * The CommitRequest reconciler: close the target's commit window now, with the
 * request's message, waiting up to closeDelaySeconds for a window to open. Only that
 * target's pending changes are committed, never another target's on the same branch.
 * Done once: a request that reached a final answer is not acted on again.
 */
import { type Clock, type Controller, type Manager, realClock } from '@operators/kit';
import { COMMIT_REQUEST, type CommitRequest } from '../api/commit-request.ts';
import { ConditionType, Reason } from '../domain/reasons.ts';
import type { Mirror } from '../mirror/mirror.ts';
import type { Caches } from './reads.ts';
import { publish } from './status.ts';

const RETRY_MS = 5_000;

export function addCommitRequestController(
  manager: Manager,
  caches: Caches,
  mirror: Mirror,
  opts: { clock?: Clock } = {},
): Controller<CommitRequest> {
  const clock = opts.clock ?? realClock;
  const deps = { client: manager.client, recorder: manager.recorder, clock };
  return manager
    .controller('commitrequest')
    .for<CommitRequest>(COMMIT_REQUEST)
    .withConcurrency(4)
    .reconcile(async (req) => {
      const cr = req.object as CommitRequest | undefined;
      if (!cr) return {};
      if (cr.status?.conditions?.some((c) => c.type === ConditionType.Ready && c.status === 'True'))
        return {};
      const ns = cr.metadata.namespace ?? '';
      const key = `${ns}/${cr.spec.targetRef.name}`;
      if (!caches.targets.store.get(key)) {
        await publish(deps, COMMIT_REQUEST, cr, {
          kind: 'not-ready',
          reason: Reason.GitTargetNotFound,
          message: `GitTarget "${cr.spec.targetRef.name}" does not exist in namespace "${ns}"`,
          stalled: false,
        });
        return { requeueAfterMs: RETRY_MS };
      }
      const result = await mirror.closeWindow(key, {
        ...(cr.spec.message ? { message: cr.spec.message } : {}),
        graceMs: (cr.spec.closeDelaySeconds ?? 0) * 1000,
      });
      const pushed = (sha: string | undefined) => ({
        type: ConditionType.Pushed,
        status: sha ? ('True' as const) : ('False' as const),
        reason: sha ? Reason.Committed : Reason.NoWindowInGrace,
        message: sha ?? '',
      });
      if (!result || result.kind === 'failed') {
        const message = result
          ? `the commit failed: ${result.error.message} (the changes stay pending and are retried)`
          : `GitTarget ${key} is not mirroring (see its conditions)`;
        await publish(deps, COMMIT_REQUEST, cr, {
          kind: 'not-ready',
          reason: Reason.FinalizeFailed,
          message,
          stalled: false,
        });
        return { requeueAfterMs: RETRY_MS };
      }
      const now = new Date(clock.now()).toISOString();
      switch (result.kind) {
        case 'committed':
          await publish(
            deps,
            COMMIT_REQUEST,
            cr,
            { kind: 'ready', reason: Reason.Committed, message: `pushed ${result.sha}` },
            {
              conditions: [pushed(result.sha)],
              fields: { sha: result.sha, committedAt: now },
            },
          );
          return {};
        case 'already-present':
          await publish(
            deps,
            COMMIT_REQUEST,
            cr,
            {
              kind: 'ready',
              reason: Reason.AlreadyPresent,
              message: 'the pending changes were already in the branch',
            },
            {
              conditions: [{ ...pushed(result.sha), reason: Reason.AlreadyPresent }],
              fields: result.sha ? { sha: result.sha } : {},
            },
          );
          return {};
        case 'nothing-pending':
          await publish(
            deps,
            COMMIT_REQUEST,
            cr,
            {
              kind: 'ready',
              reason: Reason.NoWindowInGrace,
              message: `no change of ${key} pending within ${cr.spec.closeDelaySeconds ?? 0}s: nothing to commit`,
            },
            { conditions: [pushed(undefined)] },
          );
          return {};
        default:
          return result satisfies never;
      }
    });
}
