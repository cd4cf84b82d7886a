/**
 * Who may write a Permission: RBAC's own rule, applied to what the operator will write
 * for it. The apiserver lets a user write a ClusterRole only if they hold every rule in it
 * or hold `escalate` on it (rbac/validation ConfirmNoEscalation); the operator holds
 * `escalate` itself, so without this check anyone who may `create permissions` would
 * borrow it. Pure: the webhook asks the apiserver the questions listed here (one
 * SubjectAccessReview each) and hands the answers back.
 *
 * The rule, in full (docs/permissions.md, "Security model"):
 * - `escalate` on the Permission itself (`permissions.permissions.shturval.tech`, its
 *   name, its namespace) admits whatever it grants;
 * - without it, its `platform_rules` (the `platform:` ClusterRole on the management
 *   cluster) must each be held by the writer, cluster-wide, on the management cluster —
 *   exactly RBAC's rule for a ClusterRole there;
 * - what the management cluster's RBAC cannot judge always needs `escalate`:
 *   `granted_cluster_rules` (written into client clusters, where the operator cannot ask
 *   on the writer's behalf), and the Argo CD and Kubeflow plugins (grants RBAC does not
 *   express);
 * - each `aggregateTo` target receives these rules into its own ClusterRole, so everyone
 *   holding the target gains them: that needs `escalate` on the target too, whatever the
 *   writer holds.
 */

import type { PolicyRule } from '../api/common.ts';
import { GROUP } from '../api/common.ts';
import type { Permission } from '../api/permission.ts';
import { Reason } from './reasons.ts';

/** The verb on `permissions.permissions.shturval.tech` that lets a user grant beyond what they hold. */
export const ESCALATE_VERB = 'escalate';

/**
 * One question for the apiserver, as a SubjectAccessReview's attributes: may the user do
 * `verb` on this resource (cluster-wide: ClusterRole rules are), or on this non-resource
 * URL? Wildcards are asked literally (`*`): RBAC's authorizer then answers yes only for a
 * rule that holds the same `*` — as ConfirmNoEscalation covers a `*` only with a `*`.
 */
export type AccessQuestion =
  | {
      readonly resourceAttributes: {
        readonly group: string;
        readonly resource: string;
        readonly subresource?: string;
        readonly verb: string;
        readonly name?: string;
        readonly namespace?: string;
      };
    }
  | { readonly nonResourceAttributes: { readonly path: string; readonly verb: string } };

/**
 * The most rule questions one Permission may raise before the check gives up and asks
 * for `escalate` instead: a rule's lists multiply (groups × resources × verbs × names),
 * and each product is one SubjectAccessReview.
 */
export const MAX_RULE_QUESTIONS = 256;

/** A stable key for a question (the webhook's answers are keyed by it). */
export function questionKey(q: AccessQuestion): string {
  if ('nonResourceAttributes' in q)
    return `url ${q.nonResourceAttributes.verb} ${q.nonResourceAttributes.path}`;
  const a = q.resourceAttributes;
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  return `res ${a.verb} ${a.group}/${resource}${a.name !== undefined ? ` ${a.name}` : ''}`;
}

/** How a question reads in a message: `verb "delete" on "nodes" in group ""`. */
export function describeQuestion(q: AccessQuestion): string {
  if ('nonResourceAttributes' in q) {
    return `verb "${q.nonResourceAttributes.verb}" on non-resource URL "${q.nonResourceAttributes.path}"`;
  }
  const a = q.resourceAttributes;
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  return `verb "${a.verb}" on "${resource}" in group "${a.group}"${a.name !== undefined ? ` named "${a.name}"` : ''}`;
}

/**
 * Every (group, resource, verb[, name]) and (URL, verb) the rules grant, one question
 * each, or `tooMany` past {@link MAX_RULE_QUESTIONS}. `pods/log` is asked as resource
 * `pods`, subresource `log`, as the apiserver's authorizer sees such a request.
 */
export function ruleQuestions(rules: readonly PolicyRule[]): {
  readonly questions: readonly AccessQuestion[];
  readonly tooMany: boolean;
} {
  const out = new Map<string, AccessQuestion>();
  const add = (q: AccessQuestion): boolean => {
    out.set(questionKey(q), q);
    return out.size <= MAX_RULE_QUESTIONS;
  };
  for (const rule of rules) {
    for (const verb of rule.verbs) {
      for (const path of rule.nonResourceURLs ?? []) {
        if (!add({ nonResourceAttributes: { path, verb } })) return { questions: [], tooMany: true };
      }
      for (const group of rule.apiGroups ?? []) {
        for (const full of rule.resources ?? []) {
          const slash = full.indexOf('/');
          const resource = slash < 0 ? full : full.slice(0, slash);
          const subresource = slash < 0 ? undefined : full.slice(slash + 1);
          const names = rule.resourceNames?.length ? rule.resourceNames : [undefined];
          for (const name of names) {
            const q: AccessQuestion = {
              resourceAttributes: {
                group,
                resource,
                verb,
                ...(subresource !== undefined ? { subresource } : {}),
                ...(name !== undefined ? { name } : {}),
              },
            };
            if (!add(q)) return { questions: [], tooMany: true };
          }
        }
      }
    }
  }
  return { questions: [...out.values()], tooMany: false };
}

/**
 * What in a Permission the management cluster's RBAC cannot judge, so that only
 * `escalate` on it admits it; empty when its `platform_rules` alone decide. Each entry
 * says why, for the message.
 */
export function needsEscalate(p: Permission): string[] {
  const why: string[] = [];
  if ((p.spec.granted_cluster_rules?.length ?? 0) > 0) {
    why.push(
      'its granted_cluster_rules are written into client clusters, where the operator cannot ask whether you hold them',
    );
  }
  if (p.spec.plugins?.argocd !== undefined)
    why.push('its argocd plugin grants Argo CD policies RBAC does not express');
  if (p.spec.plugins?.kubeflow !== undefined) why.push('its kubeflow plugin grants Kubeflow profile access');
  if (ruleQuestions(p.spec.platform_rules ?? []).tooMany) {
    why.push(`its platform_rules expand to more than ${MAX_RULE_QUESTIONS} (group, resource, verb) checks`);
  }
  return why;
}

/** The `aggregateTo` targets that receive this Permission's rules (none without `platform_rules`). */
export function aggregationTargets(p: Permission): string[] {
  if ((p.spec.platform_rules?.length ?? 0) === 0) return [];
  const self = p.metadata.name ?? '';
  return [...new Set(p.spec.aggregateTo ?? [])].filter((t) => t !== self);
}

export interface PermissionAdmission {
  readonly permission: Permission;
  /** The requesting user's name, for the message. */
  readonly user: string;
  /** `escalate` on this Permission (SubjectAccessReview). */
  readonly mayEscalate: boolean;
  /** `escalate` on each {@link aggregationTargets} target; absent counts as no. */
  readonly mayEscalateTargets: ReadonlyMap<string, boolean>;
  /**
   * The apiserver's answer to each {@link ruleQuestions} question of `platform_rules`, by
   * {@link questionKey}; absent counts as no. Only consulted without `escalate`.
   */
  readonly holds: ReadonlyMap<string, boolean>;
}

export type PermissionDecision =
  | { readonly allowed: true }
  | {
      readonly allowed: false;
      readonly reason: typeof Reason.AggregateForbidden | typeof Reason.EscalateForbidden;
      readonly message: string;
    };

/** What to grant to pass: the Role rule, written out. */
const escalateRule = (name: string, namespace: string): string =>
  `verb "${ESCALATE_VERB}" on permissions.${GROUP} with resourceName "${name}" in namespace "${namespace}" ` +
  `(a Role rule {apiGroups: [${GROUP}], resources: [permissions], resourceNames: [${name}], verbs: [${ESCALATE_VERB}]})`;

/** At most this many missing rules are named; the rest are counted. */
const NAMED_MISSING = 8;

/**
 * Refuses, in this order: `aggregateTo` targets the user may not escalate (listing each);
 * then, without `escalate` on the Permission, what only `escalate` admits, or rules of
 * `platform_rules` the user does not hold (naming them). Otherwise admits.
 */
export function validatePermission(input: PermissionAdmission): PermissionDecision {
  const p = input.permission;
  const namespace = p.metadata.namespace ?? '';
  const name = p.metadata.name ?? '';
  const what = name ? `Permission "${name}"` : 'this Permission';
  const targets = aggregationTargets(p).filter((t) => input.mayEscalateTargets.get(t) !== true);
  if (targets.length > 0) {
    return {
      allowed: false,
      reason: Reason.AggregateForbidden,
      message:
        `user "${input.user}" may not aggregate the platform_rules of ${what} into Permission(s) ` +
        `${targets.map((t) => `"${t}"`).join(', ')}: everyone holding them would gain these rules, so that needs, for each, ` +
        `${targets.map((t) => escalateRule(t, namespace)).join('; ')}; ` +
        `remove them from spec.aggregateTo, or ask an administrator of namespace "${namespace}" for it`,
    };
  }
  if (input.mayEscalate) return { allowed: true };
  const why = needsEscalate(p);
  if (why.length > 0) {
    return {
      allowed: false,
      reason: Reason.EscalateForbidden,
      message:
        `user "${input.user}" may not write ${what}: ${why.join('; ')}, so it needs ${escalateRule(name, namespace)}; ` +
        `ask an administrator of namespace "${namespace}" for it`,
    };
  }
  const missing = ruleQuestions(p.spec.platform_rules ?? []).questions.filter(
    (q) => input.holds.get(questionKey(q)) !== true,
  );
  if (missing.length > 0) {
    const named = missing.slice(0, NAMED_MISSING).map(describeQuestion);
    const more = missing.length > NAMED_MISSING ? ` and ${missing.length - NAMED_MISSING} more` : '';
    return {
      allowed: false,
      reason: Reason.EscalateForbidden,
      message:
        `user "${input.user}" may not write ${what}: its platform_rules grant what they do not hold on the management cluster ` +
        `(${named.join('; ')}${more}); write only rules you hold cluster-wide, or get ${escalateRule(name, namespace)}`,
    };
  }
  return { allowed: true };
}
