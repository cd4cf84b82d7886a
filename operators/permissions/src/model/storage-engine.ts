/**
 * The StorageEngine: the in-memory model of who may do what, where, served to OPA as
 * the `/bundle`. It is a projection of the five kinds as the apiserver holds them and
 * never a source of truth: rebuilt from the API at start-up (`markReady()` once the
 * caches have listed), updated from every change after that.
 *
 * Everything is synchronous and pure data. Each object is reduced to the entry
 * data.json carries, in canonical form (sets sorted and without duplicates), when it
 * is upserted; an upsert whose entry equals the one held, or a removal of something
 * absent, changes nothing: the revision stays and no listener is called. Each entry's
 * canonical text is made once, at its upsert; data.json's text is assembled from those
 * texts and hashed lazily, once per change (the thousands of upserts of a start-up
 * rebuild cost one assembly), and the snapshot object is parsed from it only if asked.
 *
 * The revision is the sha256 (hex) of data.json's canonical text, a function of the
 * content alone: two processes, or one before and after a restart, holding the same
 * objects serve the same revision, hence the same ETag, so OPA re-downloads nothing.
 */
import { createHash } from 'node:crypto';
import type { Level, PolicyRule } from '../api/common.ts';
import type { GroupRole } from '../api/group-role.ts';
import type { Permission, PermissionPlugins } from '../api/permission.ts';
import type { Scope } from '../api/scope.ts';
import type { Tenant } from '../api/tenant.ts';
import type { UserRole } from '../api/user-role.ts';
import { tenantScopeName } from '../domain/names.ts';
import { canonicalJson, type Json } from './canonical-json.ts';

/** The one root of the bundle: OPA's `data.shturval`. */
export const BUNDLE_ROOT = 'shturval';

export type RoleKind = 'UserRole' | 'GroupRole';

/** A Permission as OPA sees it. Rule lists are the spec's, in the spec's order. */
export interface PermissionEntry {
  readonly level: Level;
  readonly platform_rules: readonly PolicyRule[];
  readonly granted_cluster_rules: readonly PolicyRule[];
  /** Absent in the spec: null (the rbac plugin alone, by default). */
  readonly plugins: PermissionPlugins | null;
}

export interface ScopeEntry {
  readonly level: Level;
  /** Client cluster ids the Scope selects (from its status); empty at level platform. */
  readonly clusters: readonly string[];
  readonly namespaces: readonly string[];
  /** `<ns>/<tenant>` of the Tenant that generated it and controls it, or null. */
  readonly tenant: string | null;
  readonly paths: readonly string[];
}

export interface TenantEntry {
  /** `<ns>/<parent>`, or null for a top-level tenant. */
  readonly parent: string | null;
  /** `<ns>/tenant-<name>`: the Scope the Tenant generates. */
  readonly scope: string;
  readonly admins: readonly string[];
  readonly members: readonly string[];
}

/** One role of a subject: what it grants, where. */
export interface Binding {
  /** `<ns>/<name>` of the UserRole or GroupRole. */
  readonly role: string;
  /** `<ns>/<scope>`. */
  readonly scope: string;
  /** `<ns>/<permission>` of each Permission named, sorted. */
  readonly permissions: readonly string[];
}

export interface GroupBinding extends Binding {
  /** The GroupRole's member list, sorted (empty when it has none). */
  readonly members: readonly string[];
}

/** data.json: everything under the bundle's root. Keys are `<ns>/<name>` unless said otherwise. */
export interface BundleData {
  readonly [BUNDLE_ROOT]: {
    readonly permissions: Readonly<Record<string, PermissionEntry>>;
    readonly scopes: Readonly<Record<string, ScopeEntry>>;
    readonly tenants: Readonly<Record<string, TenantEntry>>;
    /** By user name: the user's bindings, sorted by role. */
    readonly users: Readonly<Record<string, readonly Binding[]>>;
    /** By group name: the group's bindings, sorted by role. */
    readonly groups: Readonly<Record<string, readonly GroupBinding[]>>;
  };
}

/** What a UserRole or GroupRole contributes, held until the snapshot groups it by subject. */
interface RoleEntry {
  readonly kind: RoleKind;
  readonly namespace: string;
  readonly name: string;
  readonly subject: string;
  readonly scope: string;
  /** Names (same namespace), sorted, unique. */
  readonly permissions: readonly string[];
  /** GroupRole only. */
  readonly members: readonly string[];
  /** The canonical text of its {@link Binding} (a {@link GroupBinding} for a GroupRole). */
  readonly binding: string;
}

/** An entry and its canonical text: the text tells a real change from a repeat, and is what data.json carries. */
interface Held<T> {
  readonly entry: T;
  readonly text: string;
}

/** The lazily computed view of one state of the model. */
interface Materialized {
  readonly json: string;
  readonly revision: string;
  /** Parsed from `json` on the first snapshot() of this state. */
  data?: BundleData;
}

export type ChangeListener = () => void;

function key(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

function roleKey(kind: RoleKind, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

/** A set as data.json holds it: sorted, each element once. */
function sortedSet(values: readonly string[] | undefined): string[] {
  return [...new Set(values ?? [])].sort();
}

/** An entry's canonical text. Entries are JSON by construction: strings, arrays and objects decoded from the API. */
function entryText(entry: object): string {
  return canonicalJson(entry as unknown as Json);
}

function byKey(a: readonly [string, string], b: readonly [string, string]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
}

/**
 * A canonical JSON object from `[key, canonical text of the value]` pairs: keys sorted
 * (by UTF-16 code units, as canonicalJson sorts them), no whitespace.
 */
function objectText(pairs: [string, string][]): string {
  pairs.sort(byKey);
  let out = '{';
  for (let i = 0; i < pairs.length; i++) {
    const [k, v] = pairs[i] as [string, string];
    out += `${i ? ',' : ''}${JSON.stringify(k)}:${v}`;
  }
  return `${out}}`;
}

/** `[key, text]` pairs of a map of held entries. */
function texts<T>(map: ReadonlyMap<string, Held<T>>): [string, string][] {
  const out: [string, string][] = [];
  for (const [k, h] of map) out.push([k, h.text]);
  return out;
}

export class StorageEngine {
  private readonly permissions = new Map<string, Held<PermissionEntry>>();
  private readonly scopes = new Map<string, Held<ScopeEntry>>();
  private readonly tenants = new Map<string, Held<TenantEntry>>();
  /** By {@link roleKey}: a UserRole and a GroupRole may share a name. */
  private readonly roles = new Map<string, Held<RoleEntry>>();
  private readonly listeners = new Set<ChangeListener>();
  private materialized: Materialized | undefined;
  private ready = false;
  private readonly readyPromise: Promise<void>;
  private resolveReady!: () => void;

  constructor() {
    this.readyPromise = new Promise<void>((resolve) => {
      this.resolveReady = resolve;
    });
  }

  // ---------------------------------------------------------------------------------
  // Mutations

  upsertPermission(p: Permission): void {
    const entry: PermissionEntry = {
      level: p.spec.level,
      platform_rules: p.spec.platform_rules ?? [],
      granted_cluster_rules: p.spec.granted_cluster_rules ?? [],
      plugins: p.spec.plugins ?? null,
    };
    this.put(this.permissions, key(ns(p), nm(p)), entry, entryText(entry));
  }

  removePermission(namespace: string, name: string): void {
    this.drop(this.permissions, key(namespace, name));
  }

  /**
   * `computed`: the clusters and paths the Scope reconcile found (its status), and the
   * Tenant that controls the Scope (domain/tenant.ts scopeTenant), if one does. Not the
   * `tenantRef`: anyone who may write a Scope can name any tenant there, and the bundle
   * must not list a hand-written Scope as someone else's tenant's.
   */
  upsertScope(
    scope: Scope,
    computed: {
      readonly clusters: readonly string[];
      readonly paths: readonly string[];
      readonly tenant?: string | null;
    },
  ): void {
    const namespace = ns(scope);
    const entry: ScopeEntry = {
      level: scope.spec.level,
      clusters: sortedSet(computed.clusters),
      namespaces: sortedSet(scope.spec.namespaces),
      tenant: computed.tenant ? key(namespace, computed.tenant) : null,
      paths: sortedSet(computed.paths),
    };
    this.put(this.scopes, key(namespace, nm(scope)), entry, entryText(entry));
  }

  removeScope(namespace: string, name: string): void {
    this.drop(this.scopes, key(namespace, name));
  }

  upsertRole(kind: 'UserRole', role: UserRole): void;
  upsertRole(kind: 'GroupRole', role: GroupRole): void;
  upsertRole(kind: RoleKind, role: UserRole | GroupRole): void;
  upsertRole(kind: RoleKind, role: UserRole | GroupRole): void {
    const namespace = ns(role);
    const name = nm(role);
    const spec = role.spec;
    const subject = 'user' in spec ? spec.user : spec.group;
    const permissions = sortedSet(spec.permissions);
    const members = 'members' in spec ? sortedSet(spec.members) : [];
    const binding: Binding = {
      role: key(namespace, name),
      scope: key(namespace, spec.scope),
      permissions: permissions.map((p) => key(namespace, p)),
    };
    const entry: RoleEntry = {
      kind,
      namespace,
      name,
      subject,
      scope: spec.scope,
      permissions,
      members,
      binding: entryText(kind === 'GroupRole' ? { ...binding, members } : binding),
    };
    // The subject is not in the binding's text; a role moved to another subject is a change too.
    this.put(
      this.roles,
      roleKey(kind, namespace, name),
      entry,
      `${JSON.stringify(subject)}:${entry.binding}`,
    );
  }

  removeRole(kind: RoleKind, namespace: string, name: string): void {
    this.drop(this.roles, roleKey(kind, namespace, name));
  }

  upsertTenant(t: Tenant): void {
    const namespace = ns(t);
    const name = nm(t);
    const entry: TenantEntry = {
      parent: t.spec.parent ? key(namespace, t.spec.parent) : null,
      scope: key(namespace, tenantScopeName(name)),
      admins: sortedSet(t.spec.admins),
      members: sortedSet(t.spec.members),
    };
    this.put(this.tenants, key(namespace, name), entry, entryText(entry));
  }

  removeTenant(namespace: string, name: string): void {
    this.drop(this.tenants, key(namespace, name));
  }

  // ---------------------------------------------------------------------------------
  // Queries

  /**
   * The roles naming Permission `<ns>/<name>`, as `<kind>/<ns>/<name>` (kind-qualified:
   * a UserRole and a GroupRole may share a name), sorted. A Permission's delete waits
   * while this is not empty.
   */
  rolesReferencingPermission(namespace: string, name: string): string[] {
    const out: string[] = [];
    for (const [k, { entry: r }] of this.roles) {
      if (r.namespace === namespace && r.permissions.includes(name)) out.push(k);
    }
    return out.sort();
  }

  /**
   * How many subjects (distinct users, and distinct groups) hold a role in Scope
   * `<ns>/<name>`. A Scope's delete waits while this is not zero.
   */
  subjectsInScope(namespace: string, name: string): number {
    const subjects = new Set<string>();
    for (const { entry: r } of this.roles.values()) {
      if (r.namespace === namespace && r.scope === name) subjects.add(`${r.kind}/${r.subject}`);
    }
    return subjects.size;
  }

  /** The names (the Scope's namespace) of the Permissions its roles grant, sorted: the Scope's `status.permissions`. */
  permissionsInScope(namespace: string, name: string): string[] {
    const out = new Set<string>();
    for (const { entry: r } of this.roles.values()) {
      if (r.namespace === namespace && r.scope === name) for (const p of r.permissions) out.add(p);
    }
    return [...out].sort();
  }

  /** The names (same namespace) of the Tenants whose parent is `<ns>/<name>`, sorted. */
  childTenants(namespace: string, name: string): string[] {
    const parent = key(namespace, name);
    const out: string[] = [];
    for (const [k, { entry: t }] of this.tenants) {
      if (t.parent === parent) out.push(k.slice(namespace.length + 1));
    }
    return out.sort();
  }

  /** data.json's content now, parsed from its text. Shared and frozen: a value of this state, not a view. */
  snapshot(): BundleData {
    const m = this.materialize();
    m.data ??= deepFreeze(JSON.parse(m.json) as BundleData);
    return m.data;
  }

  /** data.json's canonical text now: the bytes the bundle carries. */
  dataJson(): string {
    return this.materialize().json;
  }

  /** sha256 hex of {@link dataJson}: equal content, equal revision, in any process. */
  revision(): string {
    return this.materialize().revision;
  }

  // ---------------------------------------------------------------------------------
  // Readiness and change notification

  /** The start-up rebuild is complete: delete decisions may be taken and `/bundle` may answer. */
  markReady(): void {
    if (this.ready) return;
    this.ready = true;
    this.resolveReady();
  }

  isReady(): boolean {
    return this.ready;
  }

  whenReady(): Promise<void> {
    return this.readyPromise;
  }

  /**
   * Calls `listener` after each mutation that changes the snapshot (synchronously,
   * within the mutation's call). Returns the function that unsubscribes it.
   */
  onChange(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  // ---------------------------------------------------------------------------------

  private put<T>(map: Map<string, Held<T>>, k: string, entry: T, text: string): void {
    if (map.get(k)?.text === text) return;
    map.set(k, { entry, text });
    this.changed();
  }

  private drop<T>(map: Map<string, Held<T>>, k: string): void {
    if (map.delete(k)) this.changed();
  }

  private changed(): void {
    this.materialized = undefined;
    // Every listener hears of the change even when one throws; the first error is rethrown after.
    let failure: { error: unknown } | undefined;
    for (const l of [...this.listeners]) {
      try {
        l();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  }

  /** data.json's canonical text, assembled from the entries' texts, and its hash. */
  private materialize(): Materialized {
    if (this.materialized) return this.materialized;
    // Each subject's bindings, `[role key, binding text]`, sorted by role below.
    const users = new Map<string, [string, string][]>();
    const groups = new Map<string, [string, string][]>();
    for (const { entry: r } of this.roles.values()) {
      const bySubject = r.kind === 'UserRole' ? users : groups;
      const list = bySubject.get(r.subject) ?? [];
      list.push([key(r.namespace, r.name), r.binding]);
      bySubject.set(r.subject, list);
    }
    const lists = (m: Map<string, [string, string][]>): [string, string][] =>
      [...m].map(([subject, list]) => [
        subject,
        `[${list
          .sort(byKey)
          .map(([, t]) => t)
          .join(',')}]`,
      ]);
    const json = objectText([
      [
        BUNDLE_ROOT,
        objectText([
          ['permissions', objectText(texts(this.permissions))],
          ['scopes', objectText(texts(this.scopes))],
          ['tenants', objectText(texts(this.tenants))],
          ['users', objectText(lists(users))],
          ['groups', objectText(lists(groups))],
        ]),
      ],
    ]);
    const revision = createHash('sha256').update(json).digest('hex');
    this.materialized = { json, revision };
    return this.materialized;
  }
}

function ns(o: { readonly metadata: { readonly namespace?: string } }): string {
  return o.metadata.namespace ?? '';
}

function nm(o: { readonly metadata: { readonly name?: string } }): string {
  return o.metadata.name ?? '';
}

/** Freezes the snapshot: one object is shared by every snapshot() of one state, so no reader may change it. */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
