/**
 * Every plugin, in the order the UserRole/GroupRole controller applies them (one after
 * the other, §5): rbac first (the access itself), then tenant (reading the tenant's
 * objects), then argocd and kubeflow (the tools on top). Deletion may run in the same
 * order: no plugin's objects depend on another's.
 */
import type { KubeClient } from '@operators/kit';
import { ArgoCdPlugin } from './argocd.ts';
import { KubeflowPlugin } from './kubeflow.ts';
import type { Plugin } from './plugin.ts';
import { RbacPlugin } from './rbac.ts';
import { TenantPlugin } from './tenant.ts';

export interface AllPluginsOptions {
  /** The management cluster (the tenant plugin writes there whatever the target). */
  readonly management: KubeClient;
  /** Tries after a 409 Conflict on argocd-rbac-cm or an AppProject; default 5. */
  readonly argoCdConflictRetries?: number;
  /** The identities the Kubeflow plugin accepts the user header from; default Kubeflow's ingress gateway. */
  readonly kubeflowGatewayPrincipals?: readonly string[];
}

export function allPlugins(opts: AllPluginsOptions): Plugin[] {
  return [
    new RbacPlugin(),
    new TenantPlugin({ management: opts.management }),
    new ArgoCdPlugin({ conflictRetries: opts.argoCdConflictRetries }),
    new KubeflowPlugin(
      opts.kubeflowGatewayPrincipals ? { gatewayPrincipals: opts.kubeflowGatewayPrincipals } : {},
    ),
  ];
}

export { ArgoCdPlugin, type ArgoCdPluginOptions } from './argocd.ts';
export { KubeflowPlugin, type KubeflowPluginOptions } from './kubeflow.ts';
export type { GrantTarget, Plugin, PluginContext, PluginName, RoleOwner, Subject } from './plugin.ts';
export { RbacPlugin } from './rbac.ts';
export { TenantPlugin, type TenantPluginOptions } from './tenant.ts';
