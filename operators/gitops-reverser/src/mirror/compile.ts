/**
 * From a GitTarget to the configuration of its data plane, or the reason there is none.
 *
 * This is the only way to a `TargetConfig`, and it starts with the gate: the GitTarget
 * reconciler and the mirror's start-up bootstrap both call it, so no stream can be
 * opened that the gate would refuse. Rules are compiled here too: each WatchRule through
 * `resolveWatchRuleSourceScope` (a refused rule contributes nothing; an own-namespace
 * item reads no provider), each ClusterWatchRule only because its target was admitted.
 *
 * Reads that fail (other than NotFound) throw: the caller requeues and keeps whatever
 * runs. Refusals are answers, with the condition they belong to and whether they stall.
 */
import type { KubeClient, KubeObject } from '@operators/kit';
import type { ClusterProvider } from '../api/cluster-provider.ts';
import type { ClusterWatchRule } from '../api/cluster-watch-rule.ts';
import {
  DEFAULT_COMMITTER_EMAIL,
  DEFAULT_COMMITTER_NAME,
  DEFAULT_HTTP_USERNAME,
  DEFAULT_KNOWN_HOSTS_KEY,
  type GitProvider,
  SecretKeys,
} from '../api/git-provider.ts';
import { AGE_IDENTITY_KEY, DEFAULT_PRUNE_MODE, type GitTarget } from '../api/git-target.ts';
import type { WatchRule } from '../api/watch-rule.ts';
import {
  type AuthzReader,
  clusterProviderName,
  gitTargetAdmitted,
  resolveWatchRuleSourceScope,
  supersededFieldRefusal,
} from '../domain/authz/index.ts';
import { branchAllowed } from '../domain/mirror/branch-glob.ts';
import { overlapLosers } from '../domain/mirror/target-path.ts';
import { parseWindowMs } from '../domain/mirror/window.ts';
import { ConditionType, Reason } from '../domain/reasons.ts';
import { type AdmittedItem, type CatalogueEntry, planStreams } from '../domain/streams.ts';
import { type GitAuth, remoteKind } from '../git/credentials.ts';
import type { TargetConfig } from './target-mirror.ts';

/** What compiling reads; the operator backs it with caches and live reads. */
export interface CompileReads {
  readonly authz: AuthzReader;
  gitProvider(namespace: string, name: string): GitProvider | undefined;
  gitTargets(): readonly GitTarget[];
  watchRules(namespace: string): readonly WatchRule[];
  clusterWatchRules(): readonly ClusterWatchRule[];
  /** A Secret, read live; undefined when it does not exist. */
  secret(namespace: string, name: string): Promise<KubeObject | undefined>;
  /** The source cluster of a provider: a client, or why there is none. */
  sourceClient(
    provider: ClusterProvider,
  ): Promise<{ ok: true; client: KubeClient; fingerprint: string } | { ok: false; message: string }>;
  catalogue(client: KubeClient): Promise<readonly CatalogueEntry[]>;
}

/** A refusal: which condition says it, its reason and message, and whether only a spec or policy change helps. */
export interface Refusal {
  readonly condition: typeof ConditionType.Validated | typeof ConditionType.GitPathAccepted;
  readonly reason: string;
  readonly message: string;
  readonly stalled: boolean;
}

export type Compiled =
  | { readonly kind: 'refused'; readonly refusal: Refusal }
  | {
      readonly kind: 'ready';
      readonly config: TargetConfig;
      /** Rule items naming resources the source does not serve. */
      readonly unmatched: readonly string[];
      /** WatchRules the gate refused (they stall on their own status). */
      readonly refusedRules: readonly string[];
    };

const refuse = (
  reason: string,
  message: string,
  stalled: boolean,
  condition: Refusal['condition'] = ConditionType.Validated,
): Compiled => ({ kind: 'refused', refusal: { condition, reason, message, stalled } });

export function targetKey(t: { metadata: { namespace?: string; name?: string } }): string {
  return `${t.metadata.namespace}/${t.metadata.name}`;
}

function secretString(secret: KubeObject | undefined, key: string): string | undefined {
  const v = (secret as { data?: Record<string, string> } | undefined)?.data?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
}

/** The GitProvider's credentials, or what is missing. */
async function credentials(reads: CompileReads, provider: GitProvider): Promise<GitAuth | string> {
  const ns = provider.metadata.namespace ?? '';
  const kind = remoteKind(provider.spec.url);
  if (kind === 'file') return { kind: 'none' };
  const ref = provider.spec.secretRef?.name;
  const secret = ref ? await reads.secret(ns, ref) : undefined;
  if (ref && !secret) return `the GitProvider's Secret "${ref}" does not exist in namespace "${ns}"`;
  if (kind === 'ssh') {
    const identity = secretString(secret, SecretKeys.Identity);
    if (!identity)
      return `the GitProvider's Secret "${ref ?? ''}" has no "${SecretKeys.Identity}" key (an ssh private key)`;
    const hostsRef = provider.spec.knownHostsRef;
    if (!hostsRef) return 'an ssh URL needs spec.knownHostsRef: host keys are always checked';
    const hostsSecret = await reads.secret(ns, hostsRef.name);
    const key = hostsRef.key ?? DEFAULT_KNOWN_HOSTS_KEY;
    const knownHosts = secretString(hostsSecret, key);
    if (!knownHosts) return `the known-hosts Secret "${hostsRef.name}" is missing or has no "${key}" key`;
    return { kind: 'ssh', identity, knownHosts };
  }
  if (!secret) return { kind: 'none' };
  const password = secretString(secret, SecretKeys.Password) ?? secretString(secret, SecretKeys.Token);
  if (!password) {
    return `the GitProvider's Secret "${ref}" has neither "${SecretKeys.Password}" nor "${SecretKeys.Token}"`;
  }
  return {
    kind: 'basic',
    username: secretString(secret, SecretKeys.Username) || DEFAULT_HTTP_USERNAME,
    password,
  };
}

export async function compileTarget(reads: CompileReads, target: GitTarget): Promise<Compiled> {
  const key = targetKey(target);
  const ns = target.metadata.namespace ?? '';
  const superseded = supersededFieldRefusal(
    'GitTarget',
    { namespace: ns, name: target.metadata.name ?? '' },
    target.spec,
  );
  if (superseded && !superseded.allowed) return refuse(superseded.reason, superseded.message, true);

  // The gate, before anything is declared.
  const admission = await gitTargetAdmitted(reads.authz, target);
  if (!admission.allowed) return refuse(admission.reason, admission.message, true);

  const provider = reads.gitProvider(ns, target.spec.providerRef.name);
  if (!provider) {
    return refuse(
      Reason.GitProviderNotFound,
      `GitProvider "${target.spec.providerRef.name}" does not exist in namespace "${ns}"`,
      false,
    );
  }
  const providerSuperseded = supersededFieldRefusal(
    'GitProvider',
    { namespace: ns, name: provider.metadata.name ?? '' },
    provider.spec,
  );
  if (providerSuperseded && !providerSuperseded.allowed) {
    return refuse(Reason.GitProviderNotReady, providerSuperseded.message, true);
  }
  if (!branchAllowed(target.spec.branch, provider.spec.allowedBranches)) {
    return refuse(
      Reason.BranchNotAllowed,
      `branch "${target.spec.branch}" matches none of GitProvider "${provider.metadata.name}" spec.allowedBranches [${provider.spec.allowedBranches.join(', ')}]`,
      true,
    );
  }
  const scopeOf = (t: GitTarget): string =>
    `${t.metadata.namespace}/${t.spec.providerRef.name}@${t.spec.branch}`;
  const losers = overlapLosers(
    reads.gitTargets().map((t) => ({
      key: targetKey(t),
      scope: scopeOf(t),
      path: t.spec.path,
      createdAt: t.metadata.creationTimestamp ?? '',
      name: t.metadata.name ?? '',
    })),
  );
  const loss = losers.get(key);
  if (loss) {
    return refuse(
      Reason.PathOverlap,
      `path "${target.spec.path}" overlaps GitTarget ${loss.with}'s on the same provider and branch; the earlier target keeps it`,
      true,
      ConditionType.GitPathAccepted,
    );
  }

  const cpName = clusterProviderName(target);
  const clusterProvider = (await reads.authz.clusterProvider(cpName)) as ClusterProvider | undefined;
  if (!clusterProvider)
    return refuse(Reason.ClusterProviderNotReady, `ClusterProvider "${cpName}" disappeared`, false);
  const source = await reads.sourceClient(clusterProvider);
  if (!source.ok) {
    return refuse(Reason.ClusterProviderNotReady, `ClusterProvider "${cpName}": ${source.message}`, false);
  }

  const auth = await credentials(reads, provider);
  if (typeof auth === 'string') return refuse(Reason.CredentialsNotFound, auth, false);

  let encryption: TargetConfig['content']['encryption'];
  const enc = target.spec.encryption;
  if (enc) {
    const ref = enc.secretRef?.name;
    const identity = ref ? secretString(await reads.secret(ns, ref), AGE_IDENTITY_KEY) : undefined;
    encryption = {
      recipients: [...enc.age.recipients],
      identities: identity ? identity.split('\n').filter((l) => l.startsWith('AGE-SECRET-KEY-')) : [],
    };
  }

  // The rules, each through the gate.
  const items: AdmittedItem[] = [];
  const refusedRules: string[] = [];
  for (const rule of reads.watchRules(ns)) {
    if (rule.spec.targetRef.name !== target.metadata.name) continue;
    const scope = await resolveWatchRuleSourceScope(reads.authz, rule, target);
    const where = `WatchRule ${ns}/${rule.metadata.name}`;
    if (!scope.admitted()) {
      refusedRules.push(`${where}: ${scope.message}`);
      continue;
    }
    for (const [i, item] of rule.spec.rules.entries()) {
      items.push({
        source: `${where} spec.rules[${i}]`,
        scope: 'Namespaced',
        ...(item.operations ? { operations: item.operations } : {}),
        apiGroups: item.apiGroups,
        ...(item.apiVersions ? { apiVersions: item.apiVersions } : {}),
        resources: item.resources,
        namespace: scope.namespacesFor(i)[0] ?? ns,
      });
    }
  }
  for (const rule of reads.clusterWatchRules()) {
    if (rule.spec.targetRef.namespace !== ns || rule.spec.targetRef.name !== target.metadata.name) continue;
    // A stored Namespaced item (an older API) stalls the rule, on its own status.
    if (rule.spec.rules.some((r) => r.scope !== undefined && r.scope !== 'Cluster')) {
      refusedRules.push(`ClusterWatchRule ${rule.metadata.name}: an item has scope other than Cluster`);
      continue;
    }
    for (const [i, item] of rule.spec.rules.entries()) {
      items.push({
        source: `ClusterWatchRule ${rule.metadata.name} spec.rules[${i}]`,
        scope: 'Cluster',
        ...(item.operations ? { operations: item.operations } : {}),
        apiGroups: item.apiGroups,
        ...(item.apiVersions ? { apiVersions: item.apiVersions } : {}),
        resources: item.resources,
        namespace: '',
      });
    }
  }
  const plan = planStreams(items, items.length ? await reads.catalogue(source.client) : []);

  const committer = provider.spec.commit?.committer ?? {
    name: DEFAULT_COMMITTER_NAME,
    email: DEFAULT_COMMITTER_EMAIL,
  };
  return {
    kind: 'ready',
    unmatched: plan.unmatched,
    refusedRules,
    config: {
      key,
      writer: {
        provider: `${ns}/${provider.metadata.name}`,
        url: provider.spec.url,
        branch: target.spec.branch,
        auth,
        committer,
      },
      content: { targetPath: target.spec.path, ...(encryption ? { encryption } : {}) },
      prune: target.spec.prune?.mode ?? DEFAULT_PRUNE_MODE,
      windowMs: parseWindowMs(target.spec.commit?.window ?? '5s') ?? 5_000,
      ...(target.spec.commit?.message ? { messageTemplate: target.spec.commit.message } : {}),
      source: { fingerprint: source.fingerprint, client: source.client },
      streams: plan.streams,
    },
  };
}
