/**
 * `resolveWatchRuleSourceScope`: may each item of a WatchRule watch the source namespace
 * it asks for? Cross-object authorization (WatchRule → GitTarget → ClusterProvider), so
 * not expressible in CEL, and a reconciler check rather than a webhook. Like
 * `gitTargetAdmitted` it runs on every compile, so a policy tightened after the rule was
 * accepted revokes it.
 *
 * Two rules, and no third:
 *  - an item watching the rule's OWN namespace (or naming none) is allowed with no
 *    provider involvement: the legacy case, which must stay free or every existing rule
 *    would break on upgrade;
 *  - any OTHER namespace, a name or `*`, additionally needs the GitTarget's namespace
 *    admitted by its ClusterProvider and that provider to set allowAnySourceNamespace.
 * What a permitted item may really read is bounded by the source credential's RBAC: a
 * 403 there is a blocked stream, not a gate denial.
 *
 * The result is a pure function of (rule spec, provider, namespace labels): nothing per
 * item outlives the spec that produced it, so items need no stable identity.
 */
import { admittedBy, clusterProviderName, type GitTargetRef, readProvider } from './git-target-admitted.ts';
import type { AuthzReader } from './reader.ts';
import {
  ReasonLegacySourceNamespace,
  ReasonSourceNamespaceAllowed,
  ReasonSourceNamespaceNotAllowed,
} from './reasons.ts';

/** `sourceNamespace: "*"`: every namespace the source credential can read. */
export const ANY_NAMESPACE = '*';

/** The part of a WatchRule the gate reads. */
export interface WatchRuleItems {
  readonly metadata: { readonly namespace?: string };
  readonly spec: {
    readonly rules: readonly { readonly resources?: readonly string[]; readonly sourceNamespace?: string }[];
  };
}

/** One item's verdict and the namespace set it resolved to. */
export interface SourceNamespaceDecision {
  /** The item's position in spec.rules. */
  readonly index: number;
  /** What the item asked for, verbatim: "" (omitted), a name, or "*". */
  readonly requested: string;
  /**
   * The RESOLVED set the item watches, one element: a name, or "" for the wildcard (the
   * cluster-wide collection). Empty when the item is denied.
   */
  readonly namespaces: readonly string[];
  readonly allowed: boolean;
  readonly reason: string;
  readonly message: string;
}

/** A whole WatchRule's verdict: one decision per item, index-aligned, and the aggregate. */
export class ResolvedSourceScope {
  readonly items: readonly SourceNamespaceDecision[];
  /** Every item admitted. */
  readonly allowed: boolean;
  /** The SourceNamespaceAuthorized condition's reason. */
  readonly reason: string;
  /** Explains the aggregate, naming the deciding item when one item decided it. */
  readonly message: string;

  /**
   * The aggregate, in upstream's stated precedence: the first denied item decides (its
   * reason and message); else any item on another namespace makes it SourceNamespaceAllowed
   * with a summary of every namespace watched; else LegacySourceNamespace with the first
   * item's message ("no rule items to authorize" for none).
   */
  constructor(items: readonly SourceNamespaceDecision[]) {
    this.items = items;
    const firstDenied = items.find((i) => !i.allowed);
    const legacy = items.every((i) => i.reason === ReasonLegacySourceNamespace);
    if (firstDenied) {
      this.allowed = false;
      this.reason = firstDenied.reason;
      this.message = firstDenied.message;
    } else if (!legacy) {
      this.allowed = true;
      this.reason = ReasonSourceNamespaceAllowed;
      this.message = summariseAdmitted(items);
    } else {
      this.allowed = true;
      this.reason = ReasonLegacySourceNamespace;
      this.message = items[0]?.message ?? 'no rule items to authorize';
    }
  }

  /** Whether the whole rule may compile. */
  admitted(): boolean {
    return this.allowed;
  }

  /**
   * The resolved scope as a stable string (`0=team-a;1=`), for deciding whether a rule
   * edit changes what is watched. From the RESOLVED set, not the requested one: `*`
   * resolves to "" and a denied item renders empty too, because the fingerprint
   * describes what is actually watched.
   */
  fingerprint(): string {
    return this.items.map((i) => `${i.index}=${i.namespaces[0] ?? ''}`).join(';');
  }

  /** The resolved namespace set of item `index` (empty when denied or out of range). */
  namespacesFor(index: number): readonly string[] {
    return this.items[index]?.namespaces ?? [];
  }
}

/**
 * The summary of an admitted rule that watches beyond its own namespace: every resolved
 * namespace, sorted and unique, the wildcard's "" spelled out.
 */
function summariseAdmitted(items: readonly SourceNamespaceDecision[]): string {
  const all = items.flatMap((i) =>
    i.namespaces.map((ns) => (ns === '' ? 'every namespace (cluster-wide)' : ns)),
  );
  // Byte order, as Go's sort.Strings: the names are ASCII, so code-unit order is the same.
  const sorted = [...new Set(all)].sort();
  return `all ${items.length} rule item(s) are authorized; watching source namespace(s) ${sorted.join(', ')}`;
}

/** An item by index AND by what it selects: the index alone goes stale once someone reorders the list. */
function describeItem(index: number, item: WatchRuleItems['spec']['rules'][number], own: string): string {
  const requested = item.sourceNamespace ?? '';
  const ns = requested === '' ? `"${own}" (omitted; the WatchRule's own namespace)` : `"${requested}"`;
  return `spec.rules[${index}] (resources ${(item.resources ?? []).join(',')}, sourceNamespace ${ns})`;
}

/**
 * The provider side of the gate, the same for every overriding item, so asked once per
 * rule: undefined when it permits, otherwise the item-agnostic refusal (the caller prefixes
 * the item). Ordered as upstream: a missing provider delegates nothing; then the target's
 * own admission; then the delegation flag.
 */
async function delegationRefusal(
  reader: AuthzReader,
  target: GitTargetRef,
  own: string,
): Promise<string | undefined> {
  const providerName = clusterProviderName(target);
  const provider = await readProvider(reader, providerName);
  if (!provider) {
    return (
      `referenced ClusterProvider "${providerName}" was not found, so it delegates nothing; a WatchRule may ` +
      'watch a namespace other than its own only through an existing provider that sets spec.allowAnySourceNamespace'
    );
  }
  const admission = await admittedBy(reader, provider, providerName, target.metadata.namespace ?? '');
  if (!admission.allowed) {
    return `GitTarget ${target.metadata.namespace}/${target.metadata.name} may not mirror through ClusterProvider "${providerName}" at all: ${admission.message}`;
  }
  if (provider.spec?.allowAnySourceNamespace !== true) {
    return (
      `ClusterProvider "${providerName}" does not set spec.allowAnySourceNamespace; a WatchRule may watch only ` +
      `its own namespace "${own}" until a platform admin delegates that choice`
    );
  }
  return undefined;
}

export async function resolveWatchRuleSourceScope(
  reader: AuthzReader,
  rule: WatchRuleItems,
  target: GitTargetRef,
): Promise<ResolvedSourceScope> {
  const own = rule.metadata.namespace ?? '';
  const providerName = clusterProviderName(target);
  // Read lazily and once per rule: a rule of legacy items reads nothing, and a rule of
  // ten overriding items reads the provider (and the Namespace) once.
  let delegation: Promise<string | undefined> | undefined;

  const items: SourceNamespaceDecision[] = [];
  for (const [index, item] of rule.spec.rules.entries()) {
    const requested = item.sourceNamespace ?? '';
    const where = describeItem(index, item, own);
    if (requested === '' || requested === own) {
      items.push({
        index,
        requested,
        namespaces: [own],
        allowed: true,
        reason: ReasonLegacySourceNamespace,
        message: `${where} watches this WatchRule's own namespace "${own}", which needs no authorization`,
      });
      continue;
    }
    delegation ??= delegationRefusal(reader, target, own);
    const refusal = await delegation;
    if (refusal !== undefined) {
      items.push({
        index,
        requested,
        namespaces: [],
        allowed: false,
        reason: ReasonSourceNamespaceNotAllowed,
        message: `${where}: ${refusal}`,
      });
    } else if (requested === ANY_NAMESPACE) {
      items.push({
        index,
        requested,
        namespaces: [''],
        allowed: true,
        reason: ReasonSourceNamespaceAllowed,
        message: `${where}: ClusterProvider "${providerName}" sets spec.allowAnySourceNamespace, so this item watches every namespace its source credential can read, as one cluster-wide stream`,
      });
    } else {
      items.push({
        index,
        requested,
        namespaces: [requested],
        allowed: true,
        reason: ReasonSourceNamespaceAllowed,
        message: `${where}: ClusterProvider "${providerName}" sets spec.allowAnySourceNamespace, so this item may watch source namespace "${requested}"; whether it can is decided by that credential's RBAC`,
      });
    }
  }
  return new ResolvedSourceScope(items);
}
