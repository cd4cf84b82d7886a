/**
 * The RBAC plugin: the (Cluster)RoleBindings that give a role's subject one Permission
 * in one target cluster (src/domain/plugins/rbac-bindings.ts says which). Objects we
 * wholly own: created outright the first time (the role's status recording no grant
 * there), afterwards read and server-side applied only when they differ; the bindings of
 * the grant no longer wanted (a namespace dropped from the Scope) are deleted in the
 * same pass.
 *
 * A same-named binding someone else holds (another owner, or not ours at all) is never
 * overwritten: the grant is reported Failed, naming the holder. `delete` removes both
 * kinds by the grant's labels and name, whatever the level is now.
 */

import type { PluginObject } from '../api/role-status.ts';
import { PLATFORM } from '../api/role-status.ts';
import {
  bindingKind,
  CLUSTER_ROLE_BINDING,
  desiredBindings,
  grantBindingName,
  ROLE_BINDING,
} from '../domain/plugins/rbac-bindings.ts';
import { grantOf, type Plugin, type PluginContext } from './plugin.ts';
import { createSet, outcome, removeSet, type SetResult, syncSet } from './writes.ts';

export class RbacPlugin implements Plugin {
  readonly name = 'rbac' as const;

  /** Default on: a Permission without `plugins` feeds rbac only. */
  applies(ctx: PluginContext): boolean {
    const plugins = ctx.permission.spec.plugins;
    if (plugins !== undefined && plugins.rbac === undefined) return false;
    // platform-level bindings live on the management cluster only.
    return (ctx.target.level === 'platform') === (ctx.target.cluster === PLATFORM);
  }

  async apply(ctx: PluginContext): Promise<PluginObject> {
    const grant = grantOf(ctx);
    const { client, level, namespaces } = ctx.target;
    const kind = bindingKind(level);
    const byName = { plugin: this.name, fieldSelector: `metadata.name=${grantBindingName(grant)}` };
    // Only the level's own kind: a Scope's level is immutable, and a Scope cannot go while a
    // role hangs off it, so bindings of the other kind can only be left by a role's delete,
    // which removes both. (Listing the other kind here cost a cluster-wide RoleBinding scan
    // per grant: the bench's largest single item.)
    const desired = desiredBindings(grant, level, namespaces);
    // Never granted here (the status says so): create, and read only if a name is taken.
    const created =
      ctx.previous === undefined ? await createSet(client, desired, ctx.fieldManager) : undefined;
    const results: SetResult[] = [
      created ?? (await syncSet(client, kind, grant, desired, ctx.fieldManager, byName)),
    ];
    return outcome(results, { foreignIsError: true });
  }

  async delete(ctx: PluginContext): Promise<PluginObject> {
    const grant = grantOf(ctx);
    const { client } = ctx.target;
    const byName = { plugin: this.name, fieldSelector: `metadata.name=${grantBindingName(grant)}` };
    return outcome([
      await removeSet(client, ROLE_BINDING, grant, byName),
      await removeSet(client, CLUSTER_ROLE_BINDING, grant, byName),
    ]);
  }
}
