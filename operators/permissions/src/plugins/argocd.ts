/**
 * The Argo CD plugin: this owner's lines in `policy.csv` of the `argocd-rbac-cm`
 * ConfigMap, and this owner's roles in AppProjects, both on the management cluster
 * (the `platform` target only; Argo CD runs there).
 *
 * Neither object is ours: people, Argo CD's own chart and other tools write them. So
 * no server-side apply (it would take the whole `policy.csv` value, a single field, from
 * whoever wrote it last): read, merge our block or our roles into what is there
 * (src/domain/plugins/), and write back only when the result differs, with the
 * resourceVersion we read (a PUT). A concurrent edit then fails our write with 409
 * Conflict instead of being overwritten, and we read and merge again, up to
 * `conflictRetries` times. Only the `policy.csv` key is ever changed; the ConfigMap is
 * created (holding only `policy.csv`, labelled `app.kubernetes.io/part-of: argocd` as
 * Argo CD's manifests label it) when it does not exist, and never deleted.
 *
 * AppProjects: every project in the Argo CD namespace is read (one list), so a project
 * dropped from the Permission loses our role too. A project the Permission names that
 * does not exist, or the AppProject CRD missing from the cluster, is reported as
 * Failed; the caller backs off and tries again (a project or the CRD may come later).
 */
import { ApiErrorReason, isApiError, type KubeClient, type KubeObject } from '@operators/kit';
import type { PluginObject, PluginObjectRef } from '../api/role-status.ts';
import { PLATFORM } from '../api/role-status.ts';
import {
  type DesiredRole,
  isOwnedRole,
  mergeProjectRoles,
  type ProjectRole,
  projectRole,
} from '../domain/plugins/appproject-roles.ts';
import { mergePolicyCsv, type PolicyOwner, policyLines } from '../domain/plugins/argocd-policy-csv.ts';
import type { Plugin, PluginContext } from './plugin.ts';
import { failureMessage, outcome, sameJson, serves } from './writes.ts';

export const ARGOCD_RBAC_CONFIGMAP = 'argocd-rbac-cm';
export const POLICY_CSV_KEY = 'policy.csv';
/** The label Argo CD's own manifests put on its ConfigMaps; given to the ConfigMap when we create it. */
const PART_OF = 'app.kubernetes.io/part-of';
export const CONFIG_MAP = { apiVersion: 'v1', kind: 'ConfigMap' } as const;
export const APP_PROJECT = { apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject' } as const;

/** How often a read-merge-write is tried again after a 409 Conflict before reporting Failed. */
export const DEFAULT_CONFLICT_RETRIES = 5;

export interface ArgoCdPluginOptions {
  /** Tries after a 409 Conflict (a concurrent edit) before giving up for this round; default 5. */
  readonly conflictRetries?: number;
}

type ConfigMap = KubeObject & { data?: Record<string, string> };
type AppProject = KubeObject & { spec?: { roles?: ProjectRole[]; [k: string]: unknown } };

/** What one part of the work did: the objects it holds us in, or why it failed. */
interface Part {
  readonly objects: PluginObjectRef[];
  readonly errors: string[];
}

export class ArgoCdPlugin implements Plugin {
  readonly name = 'argocd' as const;
  private readonly retries: number;

  constructor(opts: ArgoCdPluginOptions = {}) {
    this.retries = opts.conflictRetries ?? DEFAULT_CONFLICT_RETRIES;
  }

  applies(ctx: PluginContext): boolean {
    return ctx.target.cluster === PLATFORM && ctx.permission.spec.plugins?.argocd !== undefined;
  }

  async apply(ctx: PluginContext): Promise<PluginObject> {
    const owner = policyOwner(ctx);
    const spec = ctx.permission.spec.plugins?.argocd ?? {};
    const lines = policyLines(ctx.subject.name, spec.policies ?? []);
    if (lines.kind === 'invalid') return { status: 'Failed', message: lines.message };
    const roles = new Map<string, ProjectRole>();
    for (const p of spec.projects ?? []) {
      const r: DesiredRole = projectRole(owner, p.project, ctx.subject.name, p.policies);
      if (r.kind === 'invalid') return { status: 'Failed', message: r.message };
      roles.set(p.project, r.role);
    }
    return this.sync(ctx, owner, lines.lines, roles);
  }

  delete(ctx: PluginContext): Promise<PluginObject> {
    return this.sync(ctx, policyOwner(ctx), [], new Map());
  }

  private async sync(
    ctx: PluginContext,
    owner: PolicyOwner,
    lines: readonly string[],
    roles: ReadonlyMap<string, ProjectRole>,
  ): Promise<PluginObject> {
    const { client } = ctx.target;
    const csv = await this.policy(client, ctx.argoCdNamespace, owner, lines).catch(
      (err): Part => ({ objects: [], errors: [`${ARGOCD_RBAC_CONFIGMAP}: ${failureMessage(err)}`] }),
    );
    const projects = await this.projects(ctx, owner, roles).catch(
      (err): Part => ({ objects: [], errors: [`AppProjects: ${failureMessage(err)}`] }),
    );
    return outcome([
      { ...csv, foreign: [] },
      { ...projects, foreign: [] },
    ]);
  }

  /** Merges our block into policy.csv, writing only when it changes, again on a conflict. */
  private async policy(
    client: KubeClient,
    namespace: string,
    owner: PolicyOwner,
    lines: readonly string[],
  ): Promise<Part> {
    const ref: PluginObjectRef = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace,
      name: ARGOCD_RBAC_CONFIGMAP,
    };
    const objects = lines.length > 0 ? [ref] : [];
    for (let attempt = 0; ; attempt++) {
      const cm = await client.find<ConfigMap>(CONFIG_MAP, ARGOCD_RBAC_CONFIGMAP, namespace);
      const current = cm?.data?.[POLICY_CSV_KEY];
      const merged = mergePolicyCsv(current, owner, lines);
      if (merged === (current ?? '')) return { objects, errors: [] };
      try {
        if (!cm) {
          await client.create<ConfigMap>({
            ...CONFIG_MAP,
            metadata: { name: ARGOCD_RBAC_CONFIGMAP, namespace, labels: { [PART_OF]: 'argocd' } },
            data: { [POLICY_CSV_KEY]: merged },
          });
        } else {
          const { managedFields: _m, ...metadata } = cm.metadata;
          await client.replace<ConfigMap>({
            ...cm,
            ...CONFIG_MAP,
            metadata,
            data: { ...cm.data, [POLICY_CSV_KEY]: merged },
          });
        }
        return { objects, errors: [] };
      } catch (err) {
        if (!raced(err)) throw err;
        if (attempt >= this.retries)
          throw new Error(`gave up after ${attempt + 1} conflicting writes: ${failureMessage(err)}`);
      }
    }
  }

  /** Our role in each AppProject that should hold one, and in no other. */
  private async projects(
    ctx: PluginContext,
    owner: PolicyOwner,
    roles: ReadonlyMap<string, ProjectRole>,
  ): Promise<Part> {
    const { client, cluster } = ctx.target;
    const namespace = ctx.argoCdNamespace;
    if (!(await serves(client, APP_PROJECT))) {
      if (roles.size === 0) return { objects: [], errors: [] };
      return { objects: [], errors: [`Argo CD AppProject CRD not installed in ${cluster}`] };
    }
    const { items } = await client.listAll<AppProject>(APP_PROJECT, { namespace });
    const objects: PluginObjectRef[] = [];
    const errors: string[] = [];
    for (const name of roles.keys()) {
      if (!items.some((p) => p.metadata.name === name)) {
        errors.push(`AppProject ${namespace}/${name} not found: create it, or drop it from the Permission`);
      }
    }
    for (const project of items) {
      const name = project.metadata.name ?? '';
      const desired = roles.get(name);
      try {
        await this.project(client, project, owner, desired);
        if (desired)
          objects.push({ apiVersion: APP_PROJECT.apiVersion, kind: APP_PROJECT.kind, namespace, name });
      } catch (err) {
        errors.push(`AppProject ${namespace}/${name}: ${failureMessage(err)}`);
      }
    }
    return { objects, errors };
  }

  /** Read-merge-write of one project's roles, starting from `first` (the listed copy). */
  private async project(
    client: KubeClient,
    first: AppProject,
    owner: PolicyOwner,
    desired: ProjectRole | undefined,
  ): Promise<void> {
    let project: AppProject | undefined = first;
    for (let attempt = 0; project; attempt++) {
      const current = project.spec?.roles ?? [];
      const clash = desired && current.find((r) => r.name === desired.name && !isOwnedRole(r, owner));
      if (clash)
        throw new Error(`a role named ${clash.name} exists already and is not ours; rename or remove it`);
      const merged = mergeProjectRoles(current, owner, desired);
      if (sameJson(merged, current)) return;
      const { roles: _r, ...rest } = project.spec ?? {};
      const { managedFields: _m, ...metadata } = project.metadata;
      try {
        await client.replace<AppProject>({
          ...project,
          ...APP_PROJECT,
          metadata,
          spec: merged.length > 0 ? { ...rest, roles: merged } : rest,
        });
        return;
      } catch (err) {
        if (!raced(err)) throw err;
        if (attempt >= this.retries)
          throw new Error(`gave up after ${attempt + 1} conflicting writes: ${failureMessage(err)}`);
      }
      project = await client.find<AppProject>(
        APP_PROJECT,
        first.metadata.name ?? '',
        first.metadata.namespace,
      );
    }
  }
}

/** A concurrent writer got there first: our resourceVersion is stale, or the ConfigMap was just created. */
function raced(err: unknown): boolean {
  return isApiError(err, ApiErrorReason.Conflict) || isApiError(err, ApiErrorReason.AlreadyExists);
}

function policyOwner(ctx: PluginContext): PolicyOwner {
  return {
    kind: ctx.owner.kind,
    namespace: ctx.owner.namespace,
    name: ctx.owner.name,
    permission: ctx.permission.metadata.name ?? '',
  };
}
