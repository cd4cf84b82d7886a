/**
 * The one small interface every plugin (rbac, tenant, argocd, kubeflow) implements, and
 * what the UserRole/GroupRole controller hands it: who is granted what, where.
 *
 * A plugin is called once per (role, permission, target cluster). `apply` and `delete`
 * never throw for what can go wrong out there (an apiserver refusal, a missing CRD, an
 * unreachable cluster): they answer `Failed` with a message, and the caller requeues
 * through its rate limiter. Both are idempotent and write nothing when nothing changed.
 *
 * `delete` answers `Applied` once everything this owner wrote is gone (there is nothing
 * left to undo: the removal is applied), and `Failed` with a message while something
 * could not be removed; it never answers `Deleting`, which the caller may show while it
 * has not called `delete` yet.
 */
import type { KubeClient } from '@operators/kit';
import type { Level } from '../api/common.ts';
import type { Permission } from '../api/permission.ts';
import type { PluginObject } from '../api/role-status.ts';
import type { Scope } from '../api/scope.ts';
import type { Grant, PluginName, RoleOwner, Subject } from '../domain/plugins/grant.ts';

export type { PluginName, RoleOwner, Subject };

/** Where: one cluster (a client cluster's id, or `platform`), its client, the level and the Scope's namespaces. */
export interface GrantTarget {
  readonly cluster: string;
  readonly client: KubeClient;
  readonly level: Level;
  readonly namespaces: readonly string[];
}

export interface PluginContext {
  readonly owner: RoleOwner;
  readonly subject: Subject;
  readonly permission: Permission;
  readonly scope: Scope;
  readonly target: GrantTarget;
  /** The Scope's tenant (its name, in the owner's namespace), when it has one. */
  readonly tenant?: string;
  readonly fieldManager: string;
  readonly argoCdNamespace: string;
  /**
   * What the role's status recorded for this plugin, Permission and cluster before this
   * pass; absent when the status says it was never granted there (a new role, a
   * Permission just added to it, a cluster just selected): a plugin may then create
   * without reading first, and must read and decide when a create finds the name taken.
   */
  readonly previous?: PluginObject;
}

export interface Plugin {
  readonly name: PluginName;
  /** Whether this plugin has anything to do for this permission at this target (e.g. argocd only at platform). */
  applies(ctx: PluginContext): boolean;
  /** Makes the target hold what this permission grants the subject; never throws for expected failures. */
  apply(ctx: PluginContext): Promise<PluginObject>;
  /** Removes only what this owner wrote for this permission; idempotent (already gone is success). */
  delete(ctx: PluginContext): Promise<PluginObject>;
}

/** The grant a context describes: the owner, the Permission's name, the subject. */
export function grantOf(ctx: PluginContext): Grant {
  return { owner: ctx.owner, permission: ctx.permission.metadata.name ?? '', subject: ctx.subject };
}
