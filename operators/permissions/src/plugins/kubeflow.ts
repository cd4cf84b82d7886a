/**
 * The Kubeflow plugin: at the namespace level in client clusters, a KFAM-style
 * RoleBinding and an Istio AuthorizationPolicy per user and profile namespace
 * (src/domain/plugins/kubeflow-objects.ts); a GroupRole is expanded to its
 * `members`. Objects we wholly own: server-side applied only when they differ, and the
 * grant's objects no longer wanted (a member or a namespace gone) deleted in the same
 * pass.
 *
 * Without the Istio CRD in the cluster the RoleBindings are still written (KFAM and
 * the Kubernetes API honour them) and the grant is reported Failed, naming the cluster;
 * the caller backs off and tries again, so installing Istio later completes it.
 *
 * KFAM names objects after the user and the Kubeflow role only, so the name may be
 * held already: by KFAM itself (a contributor added in the Kubeflow UI) or by another
 * of our roles granting the same user the same Kubeflow role. Such an object is left
 * as it is and named in the message, and the grant counts as Applied: it grants the
 * same access. When its holder later removes it, our next reconcile writes our own.
 */
import type { PluginObject } from '../api/role-status.ts';
import { PLATFORM } from '../api/role-status.ts';
import {
  AUTHORIZATION_POLICY,
  DEFAULT_GATEWAY_PRINCIPAL,
  desiredKubeflowObjects,
} from '../domain/plugins/kubeflow-objects.ts';
import { ROLE_BINDING } from '../domain/plugins/rbac-bindings.ts';
import { grantOf, type Plugin, type PluginContext } from './plugin.ts';
import { failureMessage, outcome, removeSet, type SetResult, serves, syncSet } from './writes.ts';

export interface KubeflowPluginOptions {
  /**
   * The identities the user header is accepted from (the ingress gateway's service
   * account, as an Istio principal); default Kubeflow's own, {@link DEFAULT_GATEWAY_PRINCIPAL}.
   */
  readonly gatewayPrincipals?: readonly string[];
}

export class KubeflowPlugin implements Plugin {
  readonly name = 'kubeflow' as const;
  private readonly principals: readonly string[];

  constructor(opts: KubeflowPluginOptions = {}) {
    const given = opts.gatewayPrincipals?.filter((p) => p !== '') ?? [];
    // Never an empty list: Istio reads a `principals` clause with no values as absent, i.e. anyone.
    this.principals = given.length > 0 ? [...given] : [DEFAULT_GATEWAY_PRINCIPAL];
  }

  applies(ctx: PluginContext): boolean {
    return (
      ctx.permission.spec.plugins?.kubeflow !== undefined &&
      ctx.target.level === 'namespace' &&
      ctx.target.cluster !== PLATFORM
    );
  }

  async apply(ctx: PluginContext): Promise<PluginObject> {
    const role = ctx.permission.spec.plugins?.kubeflow?.role;
    if (!role) return this.delete(ctx);
    const grant = grantOf(ctx);
    const { client, cluster } = ctx.target;
    const { bindings, policies } = desiredKubeflowObjects(
      grant,
      role,
      ctx.target.namespaces,
      this.principals,
    );
    const opts = { plugin: this.name };
    const results: SetResult[] = [
      await syncSet(client, ROLE_BINDING, grant, bindings, ctx.fieldManager, opts),
    ];
    const errors: string[] = [];
    try {
      if (await serves(client, AUTHORIZATION_POLICY)) {
        results.push(await syncSet(client, AUTHORIZATION_POLICY, grant, policies, ctx.fieldManager, opts));
      } else {
        errors.push(`Istio AuthorizationPolicy CRD (security.istio.io/v1) not installed in ${cluster}`);
      }
    } catch (err) {
      errors.push(`AuthorizationPolicy: ${failureMessage(err)}`);
    }
    const notes =
      grant.subject.kind === 'Group' && bindings.length === 0 ? ['the group lists no members'] : [];
    return withNotes(outcome(results, { errors }), notes);
  }

  async delete(ctx: PluginContext): Promise<PluginObject> {
    const grant = grantOf(ctx);
    const { client } = ctx.target;
    const opts = { plugin: this.name };
    const results: SetResult[] = [await removeSet(client, ROLE_BINDING, grant, opts)];
    try {
      // No CRD: nothing of that kind can exist, so nothing to remove.
      if (await serves(client, AUTHORIZATION_POLICY)) {
        results.push(await removeSet(client, AUTHORIZATION_POLICY, grant, opts));
      }
    } catch (err) {
      return outcome(results, { errors: [`AuthorizationPolicy: ${failureMessage(err)}`] });
    }
    return outcome(results);
  }
}

function withNotes(o: PluginObject, notes: readonly string[]): PluginObject {
  if (notes.length === 0) return o;
  return { ...o, message: [o.message, ...notes].filter(Boolean).join('; ') };
}
