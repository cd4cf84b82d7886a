/**
 * The GitTarget reconciler: compile (the gate first, then the references, the path, the
 * source cluster, the credentials and the rules), then move the mirror to the result —
 * or stop its streams when refused (files stay in Git). A failed read throws before
 * anything is touched, so a transient apiserver error never tears a running target down.
 *
 * Revocation follows the event: ClusterProvider, Namespace, GitProvider, WatchRule and
 * ClusterWatchRule events map to the GitTargets they affect.
 */
import {
  type Clock,
  type ConditionUpdate,
  type Controller,
  EventType,
  type KubeObject,
  type Manager,
  realClock,
} from '@operators/kit';
import { CLUSTER_PROVIDER } from '../api/cluster-provider.ts';
import { CLUSTER_WATCH_RULE, type ClusterWatchRule } from '../api/cluster-watch-rule.ts';
import { GIT_PROVIDER } from '../api/git-provider.ts';
import { GIT_TARGET, type GitTarget, MAX_RETENTION_PATHS } from '../api/git-target.ts';
import { WATCH_RULE, type WatchRule } from '../api/watch-rule.ts';
import { clusterProviderName, GateReadError } from '../domain/authz/index.ts';
import { ConditionType, EventReason, Reason } from '../domain/reasons.ts';
import type { CompileReads } from '../mirror/compile.ts';
import { type Compiled, compileTarget, targetKey } from '../mirror/compile.ts';
import type { Mirror } from '../mirror/mirror.ts';
import type { TargetRuntime } from '../mirror/target-mirror.ts';
import type { Caches } from './reads.ts';
import { NAMESPACE_GVK } from './reads.ts';
import { errorMessage, publish, type Verdict } from './status.ts';

export interface GitTargetControllerOptions {
  readonly resyncMs?: number;
  readonly clock?: Clock;
}

/** How often a target is looked at without an event (Secrets and remotes send none). */
export const DEFAULT_TARGET_RESYNC_MS = 60_000;
/** While streams sync, look again this soon. */
const SYNCING_MS = 2_000;

export function addGitTargetController(
  manager: Manager,
  caches: Caches,
  reads: CompileReads,
  mirror: Mirror,
  opts: GitTargetControllerOptions = {},
): Controller<GitTarget> {
  const clock = opts.clock ?? realClock;
  const deps = { client: manager.client, recorder: manager.recorder, clock };
  const targets = caches.targets;
  const synced = (): boolean => targets.store.hasSynced();
  const keysWhere = (pred: (t: GitTarget) => boolean): string[] =>
    synced() ? (targets.store.list() as GitTarget[]).filter(pred).map(targetKey) : [];
  let controller: Controller<GitTarget> | undefined;

  /** Targets that compete for paths with `t` (same provider and branch): a change to one can free another. */
  const siblings = (t: GitTarget): string[] =>
    keysWhere(
      (o) =>
        o.metadata.namespace === t.metadata.namespace &&
        o.spec.providerRef.name === t.spec.providerRef.name &&
        o.spec.branch === t.spec.branch &&
        targetKey(o) !== targetKey(t),
    );

  async function refused(target: GitTarget, c: Extract<Compiled, { kind: 'refused' }>): Promise<void> {
    const key = targetKey(target);
    const stopped = await mirror.revoke(key);
    if (stopped.length > 0) {
      manager.recorder.event(target, {
        type: EventType.Warning,
        reason: EventReason.StreamsStopped,
        action: 'Revoke',
        note: `${stopped.length} stream(s) stopped (${c.refusal.reason}); files stay in Git`,
      });
    }
    const { refusal } = c;
    const conditions: ConditionUpdate[] = [
      refusal.condition === ConditionType.Validated
        ? { type: ConditionType.Validated, status: 'False', reason: refusal.reason, message: refusal.message }
        : { type: ConditionType.Validated, status: 'True', reason: Reason.Ready, message: '' },
      {
        type: ConditionType.StreamsRunning,
        status: 'False',
        reason: refusal.reason,
        message: 'no stream runs while the target is refused',
      },
    ];
    if (refusal.condition === ConditionType.GitPathAccepted) {
      conditions.push({
        type: ConditionType.GitPathAccepted,
        status: 'False',
        reason: refusal.reason,
        message: refusal.message,
      });
    }
    await publish(
      deps,
      GIT_TARGET,
      target,
      { kind: 'not-ready', reason: refusal.reason, message: refusal.message, stalled: refusal.stalled },
      { conditions, fields: { streams: 0 } },
    );
  }

  function verdictOf(
    c: Extract<Compiled, { kind: 'ready' }>,
    rt: TargetRuntime & { pushError?: { kind: string; message: string }; lastCommit?: { sha: string } },
  ): { verdict: Verdict; streams: ConditionUpdate } {
    const refusedStream = rt.streams.find((s) => s.state.kind === 'refused');
    const gitFailed = rt.streams.find((s) => s.state.kind === 'failed' && s.state.gitKind !== undefined);
    const failed = rt.streams.find(
      (s) => s.state.kind === 'failed' || (s.state.kind === 'syncing' && s.state.lastError),
    );
    const syncing = rt.streams.filter((s) => s.state.kind === 'syncing');
    const stateMessage = (s: (typeof rt.streams)[number]): string =>
      s.state.kind === 'refused' || s.state.kind === 'failed'
        ? s.state.message
        : s.state.kind === 'syncing'
          ? `${s.key}: ${s.state.lastError ?? 'syncing'}`
          : s.key;
    let streams: ConditionUpdate;
    if (gitFailed && gitFailed.state.kind === 'failed') {
      // The watch works; the branch cannot be read or written (auth, host key, reachability).
      streams = {
        type: ConditionType.StreamsRunning,
        status: 'False',
        reason: gitReason(gitFailed.state.gitKind),
        message: `${stateMessage(gitFailed)} (retried with backoff)`,
      };
    } else if (refusedStream) {
      streams = {
        type: ConditionType.StreamsRunning,
        status: 'False',
        reason: Reason.EncryptionRequired,
        message: stateMessage(refusedStream),
      };
    } else if (failed) {
      streams = {
        type: ConditionType.StreamsRunning,
        status: 'False',
        reason: Reason.StreamsBlocked,
        message: stateMessage(failed),
      };
    } else if (syncing.length > 0) {
      streams = {
        type: ConditionType.StreamsRunning,
        status: 'Unknown',
        reason: Reason.Progressing,
        message: `${syncing.length} stream(s) taking their first snapshot`,
      };
    } else {
      streams = {
        type: ConditionType.StreamsRunning,
        status: 'True',
        reason: Reason.Ready,
        message: `${rt.streams.length} stream(s) watching`,
      };
    }
    let verdict: Verdict;
    if (streams.status === 'False') {
      verdict = {
        kind: 'not-ready',
        reason: streams.reason,
        message: streams.message ?? '',
        stalled: refusedStream !== undefined,
      };
    } else if (c.unmatched.length > 0) {
      verdict = {
        kind: 'not-ready',
        reason: Reason.ResourceNotFound,
        message: c.unmatched.join('; '),
        stalled: true,
      };
    } else if (rt.pushError) {
      const reason = gitReason(rt.pushError.kind);
      verdict = {
        kind: 'not-ready',
        reason,
        message: `${rt.pushError.message} (changes are kept and retried)`,
        stalled: false,
      };
    } else if (streams.status === 'Unknown') {
      verdict = { kind: 'progressing', reason: Reason.Progressing, message: streams.message ?? '' };
    } else {
      verdict = {
        kind: 'ready',
        reason: Reason.Mirroring,
        message: `${rt.streams.length} stream(s) mirrored into ${c.config.writer.url} ${c.config.writer.branch}:${c.config.content.targetPath}`,
      };
    }
    return { verdict, streams };
  }

  async function reconcile(target: GitTarget): Promise<{ requeueAfterMs: number }> {
    const key = targetKey(target);
    let compiled: Compiled;
    try {
      compiled = await compileTarget(reads, target);
    } catch (err) {
      // No decision: keep what runs, say so, retry.
      if (err instanceof GateReadError) {
        manager.log.warn({ target: key, err: err.message }, 'the gate could not read; streams keep running');
      }
      throw err;
    }
    if (compiled.kind === 'refused') {
      const was = target.status?.conditions?.find((c) => c.type === ConditionType.Validated);
      await refused(target, compiled);
      if (was?.status !== 'False' || was.reason !== compiled.refusal.reason) {
        for (const k of siblings(target)) controller?.enqueue(k);
      }
      return { requeueAfterMs: opts.resyncMs ?? DEFAULT_TARGET_RESYNC_MS };
    }
    // The controller's workers can start a moment before the mirror (a leader-only
    // runnable started after them): not an error, just early.
    if (!mirror.isRunning) return { requeueAfterMs: 250 };
    await mirror.apply(compiled.config);
    const rt = mirror.runtime(key) ?? { streams: [], retained: [], swept: true };
    const { verdict, streams } = verdictOf(compiled, rt);
    const conditions: ConditionUpdate[] = [
      {
        type: ConditionType.Validated,
        status: 'True',
        reason: Reason.Ready,
        message: `admitted by ClusterProvider "${clusterProviderName(target)}"`,
      },
      { type: ConditionType.GitPathAccepted, status: 'True', reason: Reason.Ready, message: '' },
      streams,
    ];
    const lastCommit = rt.lastCommit ?? target.status?.lastCommit;
    if (rt.lastCommit && rt.lastCommit.sha !== target.status?.lastCommit?.sha) {
      manager.recorder.event(target, {
        type: EventType.Normal,
        reason: EventReason.Committed,
        action: 'Push',
        note: `pushed ${rt.lastCommit.sha} to ${compiled.config.writer.url} ${compiled.config.writer.branch}`,
      });
    }
    await publish(deps, GIT_TARGET, target, verdict, {
      conditions,
      fields: {
        streams: rt.streams.length,
        ...(lastCommit ? { lastCommit } : {}),
        retention: { inferredDeletes: rt.retained.length, paths: rt.retained.slice(0, MAX_RETENTION_PATHS) },
      },
    });
    return {
      requeueAfterMs:
        verdict.kind === 'progressing' ? SYNCING_MS : (opts.resyncMs ?? DEFAULT_TARGET_RESYNC_MS),
    };
  }

  controller = manager
    .controller('gittarget')
    .for<GitTarget>(GIT_TARGET)
    .watches(CLUSTER_PROVIDER, (cp: KubeObject) =>
      keysWhere((t) => clusterProviderName(t) === cp.metadata.name),
    )
    .watches(NAMESPACE_GVK, (ns: KubeObject) => keysWhere((t) => t.metadata.namespace === ns.metadata.name), {
      metadataOnly: true,
    })
    .watches(GIT_PROVIDER, (p: KubeObject) =>
      keysWhere(
        (t) => t.metadata.namespace === p.metadata.namespace && t.spec.providerRef.name === p.metadata.name,
      ),
    )
    .watches(WATCH_RULE, (r: KubeObject) => [
      `${r.metadata.namespace}/${(r as WatchRule).spec?.targetRef?.name}`,
    ])
    .watches(CLUSTER_WATCH_RULE, (r: KubeObject) => {
      const ref = (r as ClusterWatchRule).spec?.targetRef;
      return ref ? [`${ref.namespace}/${ref.name}`] : [];
    })
    .withConcurrency(4)
    .reconcile(async (req) => {
      const target = req.object as GitTarget | undefined;
      if (!target) {
        // Deleted: its streams stop, its files stay; a target it kept from a path may now write.
        await mirror.forget(req.key);
        const [ns] = req.key.split('/');
        for (const k of keysWhere((t) => t.metadata.namespace === ns)) controller?.enqueue(k);
        return {};
      }
      try {
        return await reconcile(target);
      } catch (err) {
        if (!(err instanceof GateReadError)) {
          manager.log.error({ target: req.key, err: errorMessage(err) }, 'reconcile failed');
        }
        throw err;
      }
    });
  return controller;
}

/** The condition reason of a git failure kind (`GitErrorKind`). */
function gitReason(kind: string | undefined): string {
  switch (kind) {
    case 'AuthFailed':
    case 'HostKeyMismatch':
      return Reason.AuthFailed;
    case 'Unreachable':
    case 'RepositoryNotFound':
      return Reason.Unreachable;
    default:
      return Reason.PushFailed;
  }
}
