/**
 * The admission webhooks for Permission, UserRole, GroupRole, Scope and Tenant (§1, §6, and the
 * security model of docs/permissions.md, "Security model"). They look up
 * what the decision needs (the Scope and its tenant, the Permissions, the parent: from
 * the replica's own informer stores, which every replica keeps synced, else live; so a
 * replica that is not the leader answers as well as the leader), ask the
 * apiserver what the requesting user may do (SubjectAccessReviews through a short cache),
 * and hand the pure decisions in domain/admission.ts and domain/permission-admission.ts
 * the facts.
 *
 * An update that leaves `spec` as it was is admitted without a look: the operator's own
 * metadata writes (finalizers, owner references) must never depend on a review. Deletes
 * are checked (a role, a Scope or a Tenant inside a tenant may be removed only by who
 * may manage that tenant); the control plane's own deleters (garbage collector,
 * namespace controller) are exempt, in the configuration's matchConditions and here.
 */
import {
  type AdmissionRequest,
  type AdmissionUserInfo,
  allow,
  deny,
  type KubeClient,
  type KubeObject,
  type ValidatingHandler,
  type ValidationDecision,
} from '@operators/kit';
import type { GroupRole } from '../api/group-role.ts';
import { PERMISSION, type Permission } from '../api/permission.ts';
import { SCOPE, type Scope } from '../api/scope.ts';
import { TENANT, type Tenant } from '../api/tenant.ts';
import type { UserRole } from '../api/user-role.ts';
import {
  type TenantCheck,
  validateRole,
  validateScope,
  validateTenant,
  validateTenantChecks,
} from '../domain/admission.ts';
import {
  aggregationTargets,
  needsEscalate,
  questionKey,
  ruleQuestions,
  validatePermission,
} from '../domain/permission-admission.ts';
import type { AccessReviewer } from './access.ts';
import { mayEscalate, mayGrant, mayManage } from './grantor.ts';

/** The paths the webhook server answers on (the chart's ValidatingWebhookConfiguration names the same). */
export const WEBHOOK_PATHS = {
  permission: '/validate-permissions-shturval-tech-v1beta1-permission',
  userRole: '/validate-permissions-shturval-tech-v1beta1-userrole',
  groupRole: '/validate-permissions-shturval-tech-v1beta1-grouprole',
  scope: '/validate-permissions-shturval-tech-v1beta1-scope',
  tenant: '/validate-permissions-shturval-tech-v1beta1-tenant',
} as const;

/**
 * The control plane's own deleters, never refused a DELETE: the garbage collector
 * removes a Scope's roles and a Tenant's Scope (owner references), the namespace
 * controller everything in a namespace being deleted. Service-account names when
 * kube-controller-manager runs with --use-service-account-credentials, its own user when
 * not. The configuration's matchConditions skip the webhook for them (so they work while
 * the operator is down); the handlers admit them too.
 */
export const CONTROL_PLANE_DELETERS = [
  'system:serviceaccount:kube-system:generic-garbage-collector',
  'system:serviceaccount:kube-system:namespace-controller',
  'system:kube-controller-manager',
] as const;

/** The longest tenantRef/parentScope chain followed: a cycle or a deeper chain stops there. */
const MAX_SCOPE_DEPTH = 16;

/**
 * A replica's own informer stores of the kinds the webhooks read (every replica keeps
 * them synced: they feed its model), looked up by `<namespace>/<name>`. `get` throws
 * until the first list is stored.
 */
export interface CachedKinds {
  readonly scopes: { get(key: string): unknown };
  readonly permissions: { get(key: string): unknown };
}

export interface WebhookDeps {
  readonly client: KubeClient;
  /**
   * Read first, so that an answer costs no apiserver round trip; a miss (an object
   * created a moment ago, or a store not synced yet) is read live. Absent: always live.
   */
  readonly cached?: CachedKinds;
  readonly access: AccessReviewer;
  /**
   * The operator's own user name (its service account's), for the one exemption it
   * needs: the Tenant controller creates, updates and deletes the Scopes it generates.
   */
  readonly self: () => Promise<string | undefined>;
}

/**
 * The user the client authenticates as, asked once with a SelfSubjectReview (which every
 * authenticated user may create); undefined (no exemption) when it cannot be told, asked
 * again next time.
 */
export function selfUser(client: KubeClient): () => Promise<string | undefined> {
  let known: Promise<string | undefined> | undefined;
  return () => {
    known ??= client
      .create({
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'SelfSubjectReview',
        metadata: {},
      } as KubeObject)
      .then((r) => (r as { status?: { userInfo?: { username?: string } } }).status?.userInfo?.username)
      .catch(() => {
        known = undefined;
        return undefined;
      });
    return known;
  };
}

const sameSpec = (req: AdmissionRequest): boolean =>
  req.operation === 'UPDATE' &&
  JSON.stringify((req.oldObject as { spec?: unknown } | null)?.spec) ===
    JSON.stringify((req.object as { spec?: unknown } | null)?.spec);

const controlPlaneDelete = (req: AdmissionRequest): boolean =>
  req.operation === 'DELETE' &&
  (CONTROL_PLANE_DELETERS as readonly string[]).includes(req.userInfo.username ?? '');

const operationWord = (req: AdmissionRequest): 'create' | 'update' | 'delete' =>
  req.operation === 'DELETE' ? 'delete' : req.operation === 'UPDATE' ? 'update' : 'create';

function decision(
  d: { allowed: true } | { allowed: false; reason: string; message: string },
): ValidationDecision {
  return d.allowed ? allow() : deny(d.reason, d.message);
}

/**
 * One object of ours, from the replica's store when it has it, else live. A store a
 * moment behind changes no decision a write a moment earlier would not have got: a
 * Scope that just joined a tenant held, a moment before, whatever roles were written in
 * it then (docs/permissions.md, "Admission webhooks").
 */
async function read<T>(
  deps: WebhookDeps,
  kind: 'scopes' | 'permissions',
  name: string,
  namespace: string,
  signal: AbortSignal,
): Promise<T | undefined> {
  try {
    const hit = deps.cached?.[kind].get(`${namespace}/${name}`);
    if (hit !== undefined) return hit as T;
  } catch {
    // Not synced yet: read live.
  }
  return (await deps.client.find(kind === 'scopes' ? SCOPE : PERMISSION, name, namespace, { signal })) as
    | T
    | undefined;
}

/** The tenant a Scope belongs to: its own tenantRef, or the nearest up its parentScope chain. */
async function tenantOfScope(
  deps: WebhookDeps,
  scope: Scope,
  namespace: string,
  signal: AbortSignal,
): Promise<{ tenant: string; because: string } | undefined> {
  const start = scope.metadata.name ?? '';
  let current: Scope | undefined = scope;
  const seen = new Set<string>();
  for (let depth = 0; current && depth < MAX_SCOPE_DEPTH; depth++) {
    const name = current.metadata.name ?? '';
    const tenant = current.spec.tenantRef?.name;
    if (tenant !== undefined) {
      return {
        tenant,
        because:
          name === start
            ? `Scope "${start}" belongs to Tenant "${tenant}"`
            : `Scope "${start}" descends from Scope "${name}" of Tenant "${tenant}"`,
      };
    }
    seen.add(name);
    const parent: string | undefined = current.spec.parentScope?.name;
    if (parent === undefined || seen.has(parent)) return undefined;
    current = await read<Scope>(deps, 'scopes', parent, namespace, signal);
  }
  return undefined;
}

async function check(
  deps: WebhookDeps,
  user: AdmissionUserInfo,
  namespace: string,
  reached: { tenant: string; because: string } | undefined,
  signal: AbortSignal,
): Promise<TenantCheck[]> {
  if (!reached) return [];
  return [{ ...reached, mayManage: await mayManage(deps.access, user, reached.tenant, namespace, signal) }];
}

export function roleHandler(
  deps: WebhookDeps,
  kind: 'UserRole' | 'GroupRole',
): ValidatingHandler<UserRole | GroupRole> {
  return async (req, { signal }) => {
    if (controlPlaneDelete(req)) return allow();
    const user = req.userInfo.username ?? '';
    if (req.operation === 'DELETE') {
      const old = req.oldObject;
      if (!old) return allow();
      const namespace = old.metadata.namespace ?? req.namespace ?? '';
      const scope = await read<Scope>(deps, 'scopes', old.spec.scope, namespace, signal);
      // No Scope: the role grants nowhere any more, and no tenant's wall is in the way.
      if (!scope) return allow();
      const reached = await tenantOfScope(deps, scope, namespace, signal);
      const checks = await check(deps, req.userInfo, namespace, reached, signal);
      return decision(
        validateTenantChecks(user, `delete ${kind} "${old.metadata.name ?? ''}"`, namespace, checks),
      );
    }
    const role = req.object;
    if (!role || sameSpec(req)) return allow();
    const namespace = role.metadata.namespace ?? req.namespace ?? '';
    const names = [...new Set(role.spec.permissions)];
    const [scope, found, granted] = await Promise.all([
      read<Scope>(deps, 'scopes', role.spec.scope, namespace, signal),
      Promise.all(names.map((n) => read<Permission>(deps, 'permissions', n, namespace, signal))),
      Promise.all(names.map((n) => mayGrant(deps.access, req.userInfo, 'permissions', n, namespace, signal))),
    ]);
    const reached = scope ? await tenantOfScope(deps, scope, namespace, signal) : undefined;
    const tenantChecks = await check(deps, req.userInfo, namespace, reached, signal);
    return decision(
      validateRole({
        kind,
        namespace,
        name: role.metadata.name ?? '',
        spec: role.spec,
        scope,
        permissions: new Map(names.map((n, i) => [n, found[i]])),
        grantorMay: new Map(names.map((n, i) => [n, granted[i] === true])),
        user,
        tenantChecks,
        operation: operationWord(req),
      }),
    );
  };
}

export function scopeHandler(deps: WebhookDeps): ValidatingHandler<Scope> {
  return async (req, { signal }) => {
    if (controlPlaneDelete(req)) return allow();
    if (req.operation !== 'DELETE' && (!req.object || sameSpec(req))) return allow();
    const user = req.userInfo.username ?? '';
    // The Tenant controller writes and deletes the Scopes it generates (tenantRef its Tenant).
    if (user !== '' && user === (await deps.self())) return allow();
    const scope = (req.operation === 'DELETE' ? req.oldObject : req.object) as Scope | null | undefined;
    if (!scope) return allow();
    const namespace = scope.metadata.namespace ?? req.namespace ?? '';
    const reached = new Map<string, string>();
    const reach = (r: { tenant: string; because: string } | undefined): void => {
      if (r && !reached.has(r.tenant)) reached.set(r.tenant, r.because);
    };
    let parentMissing = false;
    if (req.operation === 'DELETE' || req.operation === 'UPDATE') {
      const old = req.oldObject as Scope | null | undefined;
      if (old) reach(await tenantOfScope(deps, old, namespace, signal));
    }
    if (req.operation !== 'DELETE') {
      const ref = scope.spec.tenantRef?.name;
      if (ref !== undefined) reach({ tenant: ref, because: `its spec.tenantRef names Tenant "${ref}"` });
      const parentName = scope.spec.parentScope?.name;
      if (parentName !== undefined) {
        const parent = await read<Scope>(deps, 'scopes', parentName, namespace, signal);
        if (!parent) parentMissing = true;
        else {
          const up = await tenantOfScope(deps, parent, namespace, signal);
          if (up)
            reach({
              tenant: up.tenant,
              because: `its spec.parentScope ${up.because.replace(/^Scope /, '')}`,
            });
        }
      }
    }
    const tenantChecks = await Promise.all(
      [...reached].map(async ([tenant, because]) => ({
        tenant,
        because,
        mayManage: await mayManage(deps.access, req.userInfo, tenant, namespace, signal),
      })),
    );
    return decision(
      validateScope({ scope, operation: operationWord(req), parentMissing, tenantChecks, user }),
    );
  };
}

export function tenantHandler(deps: WebhookDeps): ValidatingHandler<Tenant> {
  const { client } = deps;
  return async (req, { signal }) => {
    if (controlPlaneDelete(req)) return allow();
    const user = req.userInfo.username ?? '';
    if (req.operation === 'DELETE') {
      const old = req.oldObject;
      if (!old) return allow();
      const namespace = old.metadata.namespace ?? req.namespace ?? '';
      const name = old.metadata.name ?? '';
      const checks = await check(
        deps,
        req.userInfo,
        namespace,
        { tenant: name, because: `it is Tenant "${name}"` },
        signal,
      );
      return decision(validateTenantChecks(user, `delete Tenant "${name}"`, namespace, checks));
    }
    const tenant = req.object;
    if (!tenant || sameSpec(req)) return allow();
    const namespace = tenant.metadata.namespace ?? req.namespace ?? '';
    const name = tenant.metadata.name ?? '';
    // A new child acts inside its parent; an update acts inside the Tenant itself.
    const reached =
      req.operation === 'UPDATE'
        ? { tenant: name, because: `it is Tenant "${name}"` }
        : tenant.spec.parent !== undefined
          ? { tenant: tenant.spec.parent, because: `its spec.parent names Tenant "${tenant.spec.parent}"` }
          : undefined;
    const [parent, grantorMay, tenantChecks] = await Promise.all([
      tenant.spec.parent
        ? (client.find(TENANT, tenant.spec.parent, namespace, { signal }) as Promise<Tenant | undefined>)
        : Promise.resolve(undefined),
      mayGrant(deps.access, req.userInfo, 'tenants', name, namespace, signal),
      check(deps, req.userInfo, namespace, reached, signal),
    ]);
    return decision(
      validateTenant({ tenant, parent, grantorMay, user, tenantChecks, operation: operationWord(req) }),
    );
  };
}

export function permissionHandler(deps: WebhookDeps): ValidatingHandler<Permission> {
  return async (req, { signal }) => {
    const permission = req.object;
    if (!permission || req.operation === 'DELETE' || sameSpec(req)) return allow();
    const namespace = permission.metadata.namespace ?? req.namespace ?? '';
    const name = permission.metadata.name ?? '';
    const targets = aggregationTargets(permission);
    const [escalate, targetAnswers] = await Promise.all([
      mayEscalate(deps.access, req.userInfo, name, namespace, signal),
      Promise.all(targets.map((t) => mayEscalate(deps.access, req.userInfo, t, namespace, signal))),
    ]);
    const holds = new Map<string, boolean>();
    // Rule by rule only when it can decide: without escalate, and nothing that needs it.
    if (!escalate && targetAnswers.every(Boolean) && needsEscalate(permission).length === 0) {
      const questions = ruleQuestions(permission.spec.platform_rules ?? []).questions;
      const answers = await Promise.all(questions.map((q) => deps.access.allowed(req.userInfo, q, signal)));
      questions.forEach((q, i) => {
        holds.set(questionKey(q), answers[i] === true);
      });
    }
    return decision(
      validatePermission({
        permission,
        user: req.userInfo.username ?? '',
        mayEscalate: escalate,
        mayEscalateTargets: new Map(targets.map((t, i) => [t, targetAnswers[i] === true])),
        holds,
      }),
    );
  };
}
