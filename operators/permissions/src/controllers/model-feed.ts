/**
 * Feeds the StorageEngine from the informer caches: the model is a projection of the
 * five kinds as the apiserver holds them, never a source of truth. It is complete once
 * every cache has listed (the start-up rebuild), and only then `isReady()`: no delete
 * decision is taken (reconcilers await `whenReady`) and `/bundle` answers 503 until
 * then. Every replica feeds its own model, so every replica serves the same bundle,
 * leader or not; a Scope's clusters and paths come from its status, which the leader's
 * Scope reconcile writes.
 *
 * An object stays in the model until it is gone from the API, deletion in progress or
 * not: a UserRole whose cleanup has not finished still holds its Scope (§5).
 */
import type { KubeObject, Reflector, Runnable, StoreDelta } from '@operators/kit';
import type { GroupRole } from '../api/group-role.ts';
import type { Permission } from '../api/permission.ts';
import type { Scope } from '../api/scope.ts';
import type { Tenant } from '../api/tenant.ts';
import type { UserRole } from '../api/user-role.ts';
import { tenantScopeName } from '../domain/names.ts';
import { scopeTenant } from '../domain/tenant.ts';
import type { StorageEngine } from '../model/storage-engine.ts';
import type { Caches } from './deps.ts';

interface Projection<T extends KubeObject> {
  readonly reflector: Reflector<T>;
  readonly upsert: (o: T) => void;
  readonly remove: (namespace: string, name: string) => void;
}

export class ModelFeed implements Runnable {
  readonly name = 'model-feed';
  private readonly unsubscribes: (() => void)[] = [];
  private readonly projections: Projection<KubeObject>[];
  private readonly model: StorageEngine;

  constructor(model: StorageEngine, caches: Caches) {
    this.model = model;
    // The tenant only when it controls the Scope (its own generated one), never a bare tenantRef.
    const controllingTenant = (s: Scope): string | null => {
      const ref = s.spec.tenantRef?.name;
      if (!ref) return null;
      const t = caches.tenants.store.hasSynced()
        ? (caches.tenants.store.get(`${s.metadata.namespace ?? ''}/${ref}`) as Tenant | undefined)
        : undefined;
      const owner = scopeTenant(s, t);
      return owner.kind === 'controlled' ? owner.tenant : null;
    };
    const scopeComputed = (s: Scope) => ({
      clusters: [...(s.status?.clusters ?? [])],
      paths: [...(s.status?.paths ?? [])],
      tenant: controllingTenant(s),
    });
    // A Tenant appearing, changing or going changes whether its Scope is its own.
    const rescopeTenant = (namespace: string, name: string): void => {
      if (!caches.scopes.store.hasSynced()) return;
      const s = caches.scopes.store.get(`${namespace}/${tenantScopeName(name)}`) as Scope | undefined;
      if (s) model.upsertScope(s, scopeComputed(s));
    };
    this.projections = [
      {
        reflector: caches.permissions,
        upsert: (o: Permission) => model.upsertPermission(o),
        remove: (ns: string, n: string) => model.removePermission(ns, n),
      },
      {
        reflector: caches.scopes,
        upsert: (o: Scope) => model.upsertScope(o, scopeComputed(o)),
        remove: (ns: string, n: string) => model.removeScope(ns, n),
      },
      {
        reflector: caches.userRoles,
        upsert: (o: UserRole) => model.upsertRole('UserRole', o),
        remove: (ns: string, n: string) => model.removeRole('UserRole', ns, n),
      },
      {
        reflector: caches.groupRoles,
        upsert: (o: GroupRole) => model.upsertRole('GroupRole', o),
        remove: (ns: string, n: string) => model.removeRole('GroupRole', ns, n),
      },
      {
        reflector: caches.tenants,
        upsert: (o: Tenant) => {
          model.upsertTenant(o);
          rescopeTenant(o.metadata.namespace ?? '', o.metadata.name ?? '');
        },
        remove: (ns: string, n: string) => {
          model.removeTenant(ns, n);
          rescopeTenant(ns, n);
        },
      },
    ] as unknown as Projection<KubeObject>[];
  }

  async start(signal: AbortSignal): Promise<void> {
    for (const p of this.projections) {
      this.unsubscribes.push(p.reflector.onDelta((d: StoreDelta<KubeObject>) => this.apply(p, d)));
    }
    // Not awaited: start() must return for the manager to start the caches it waits on.
    void (async () => {
      await Promise.all(this.projections.map((p) => p.reflector.waitForSync()));
      if (signal.aborted) return;
      // The full picture once, whatever deltas arrived before the handlers were in place.
      for (const p of this.projections) for (const o of p.reflector.store.list()) p.upsert(o);
      this.model.markReady();
    })();
  }

  private apply(p: Projection<KubeObject>, d: StoreDelta<KubeObject>): void {
    if (d.type === 'deleted') p.remove(d.object.metadata.namespace ?? '', d.object.metadata.name ?? '');
    else p.upsert(d.object);
  }

  async stop(): Promise<void> {
    for (const u of this.unsubscribes.splice(0)) u();
  }
}
