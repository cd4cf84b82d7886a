/**
 * The tenant plugin: a role whose Scope belongs to a Tenant gets a RoleBinding to the
 * Tenant's `tenant-get.<tenant>` Role (src/domain/plugins/tenant-bindings.ts), on the
 * management cluster, whatever cluster the grant targets: the tenant's objects live
 * there. So the plugin holds the management client itself (`management` option).
 *
 * It is applied for every target of the grant and writes the same object each time
 * (after the first, compare-before-write makes it free). `delete` removes it: the
 * caller calls it when the Permission leaves the role or the role goes, not when one
 * cluster leaves the Scope (the binding does not depend on the cluster).
 */
import type { KubeClient } from '@operators/kit';
import type { PluginObject } from '../api/role-status.ts';
import { ROLE_BINDING } from '../domain/plugins/rbac-bindings.ts';
import { tenantBinding } from '../domain/plugins/tenant-bindings.ts';
import { grantOf, type Plugin, type PluginContext } from './plugin.ts';
import { outcome, removeSet, syncSet } from './writes.ts';

export interface TenantPluginOptions {
  /** The management cluster, where the Tenant, its Roles and this binding live. */
  readonly management: KubeClient;
}

export class TenantPlugin implements Plugin {
  readonly name = 'tenant' as const;
  private readonly management: KubeClient;

  constructor(opts: TenantPluginOptions) {
    this.management = opts.management;
  }

  applies(ctx: PluginContext): boolean {
    return ctx.tenant !== undefined;
  }

  async apply(ctx: PluginContext): Promise<PluginObject> {
    const tenant = ctx.tenant;
    if (tenant === undefined) return { status: 'Applied', objects: [] };
    const grant = grantOf(ctx);
    const desired = tenantBinding(grant, tenant);
    // The grant's binding under a tenant the Scope no longer names goes in the same pass.
    const result = await syncSet(this.management, ROLE_BINDING, grant, [desired], ctx.fieldManager, {
      plugin: this.name,
    });
    return outcome([result], { foreignIsError: true });
  }

  async delete(ctx: PluginContext): Promise<PluginObject> {
    const grant = grantOf(ctx);
    return outcome([await removeSet(this.management, ROLE_BINDING, grant, { plugin: this.name })]);
  }
}
