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
import type { Decision } from './decision.ts';
import { admittedBy, clusterProviderName, type GitTargetRef, readProvider } from './git-target-admitted.ts';
import type { ClusterProviderPolicy } from './policy.ts';
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

  constructor(items: readonly SourceNamespaceDecision[]) {
    this.items = items;
    const firstDenied = items.find((i) => !i.allowed);
    const override = items.find((i) => i.allowed && i.reason === ReasonSourceNamespaceAllowed);
    if (firstDenied) {
      this.allowed = false;
      this.reason = ReasonSourceNamespaceNotAllowed;
      this.message = firstDenied.message;
    } else if (override) {
      this.allowed = true;
      this.reason = ReasonSourceNamespaceAllowed;
      this.message = override.message;
    } else {
      this.allowed = true;
      this.reason = ReasonLegacySourceNamespace;
      this.message =
        "every item watches the rule's own namespace; no ClusterProvider authorization is needed";
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

function describeItem(
  index: number,
  item: WatchRuleItems['spec']['rules'][number],
  requested: string,
): string {
  const resources = (item.resources ?? []).join(',') || '(none)';
  return `spec.rules[${index}] (resources ${resources}, sourceNamespace ${requested === '' ? '(own)' : `"${requested}"`})`;
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
  let gate: Promise<{ provider: ClusterProviderPolicy | undefined; admission: Decision }> | undefined;
  const providerGate = () => {
    gate ??= (async () => {
      const provider = await readProvider(reader, providerName);
      const admission = await admittedBy(reader, provider, providerName, target.metadata.namespace ?? '');
      return { provider, admission };
    })();
    return gate;
  };

  const items: SourceNamespaceDecision[] = [];
  for (const [index, item] of rule.spec.rules.entries()) {
    const requested = item.sourceNamespace ?? '';
    const where = describeItem(index, item, requested);
    if (requested === '' || requested === own) {
      items.push({
        index,
        requested,
        namespaces: [own],
        allowed: true,
        reason: ReasonLegacySourceNamespace,
        message: `${where}: watches the rule's own namespace`,
      });
      continue;
    }
    const { provider, admission } = await providerGate();
    const refuse = (why: string): SourceNamespaceDecision => ({
      index,
      requested,
      namespaces: [],
      allowed: false,
      reason: ReasonSourceNamespaceNotAllowed,
      message: `${where}: ${why}`,
    });
    if (!admission.allowed) {
      items.push(refuse(admission.message));
    } else if (provider?.spec?.allowAnySourceNamespace !== true) {
      items.push(
        refuse(
          `ClusterProvider "${providerName}" does not set spec.allowAnySourceNamespace, so a rule may watch only its own namespace "${own}"`,
        ),
      );
    } else {
      items.push({
        index,
        requested,
        namespaces: [requested === ANY_NAMESPACE ? '' : requested],
        allowed: true,
        reason: ReasonSourceNamespaceAllowed,
        message: `${where}: allowed by ClusterProvider "${providerName}" (spec.allowAnySourceNamespace)`,
      });
    }
  }
  return new ResolvedSourceScope(items);
}
