/**
 * docs/permissions.md held to the code, so that the page cannot drift from it:
 *
 * - its tables of reasons, PluginApplyStatus values and flags equal `domain/reasons.ts`,
 *   the RoleStatus schema and the operator process's `--help` (defaults included);
 * - it quotes every CEL message of the five CRDs, word for word;
 * - the names, labels and constants it shows are what names.ts, the plugins, the webhook
 *   configuration and the bundle server use;
 * - every ```yaml sample of our kinds is admitted by a real apiserver with the CRDs
 *   installed, its status through the status subresource, and the samples together pass
 *   the webhooks' checks (a grantor allowed everything);
 * - the data.json, the policy.csv block and the AppProject role it shows are what the
 *   model and the Argo CD plugin's merges make of those samples;
 * - the sample policy is the one the OPA tests run.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { type TestEnv, testEnv } from '@operators/controlplane/testing';
import type { JSONSchemaProps, KubeObject } from '@operators/kit';
import { parseAllDocuments } from 'yaml';
import { API_VERSION, FINALIZER } from '../src/api/common.ts';
import { permissionsCrds } from '../src/api/gen-crds.ts';
import type { GroupRole } from '../src/api/group-role.ts';
import type { Permission } from '../src/api/permission.ts';
import type { Scope } from '../src/api/scope.ts';
import { TENANT_CREATED, type Tenant } from '../src/api/tenant.ts';
import type { UserRole } from '../src/api/user-role.ts';
import { KUBECONFIG_KEY, kubeconfigSecretName } from '../src/clusters/registry.ts';
import { FIELD_MANAGER } from '../src/controllers/deps.ts';
import { validateRole, validateTenant } from '../src/domain/admission.ts';
import { CONTROL_PLANE_AVAILABLE } from '../src/domain/cluster-selection.ts';
import {
  AGGREGATION_LABEL_PREFIX,
  bindingName,
  clientClusterRoleName,
  LABELS,
  MANAGED_BY,
  platformClusterRoleName,
  platformRulesClusterRoleName,
  tenantEditRoleName,
  tenantGetRoleName,
  tenantScopeName,
} from '../src/domain/names.ts';
import {
  projectRole,
  projectRoleName,
  ROLE_DESCRIPTION_MARKER,
  ROLE_PREFIX,
} from '../src/domain/plugins/appproject-roles.ts';
import { mergePolicyCsv, POLICY_MARKER, policyLines } from '../src/domain/plugins/argocd-policy-csv.ts';
import { PERMISSION_LABEL, PLUGIN_LABEL } from '../src/domain/plugins/grant.ts';
import { kubeflowObjectName, USERID_HEADER } from '../src/domain/plugins/kubeflow-objects.ts';
import { tenantBindingName } from '../src/domain/plugins/tenant-bindings.ts';
import { Reason } from '../src/domain/reasons.ts';
import { SCOPE_ANNOTATION_PREFIX, scopeAnnotationKey } from '../src/domain/scope-annotations.ts';
import { TENANT_EDITABLE, TENANT_READABLE } from '../src/domain/tenant.ts';
import { BUNDLE_PATHS } from '../src/model/bundle-server.ts';
import { BUNDLE_ROOT, StorageEngine } from '../src/model/storage-engine.ts';
import { LEASE_NAME } from '../src/operator.ts';
import { ARGOCD_RBAC_CONFIGMAP, POLICY_CSV_KEY } from '../src/plugins/argocd.ts';
import { WEBHOOK_CONFIGURATION_NAME, webhookConfiguration } from '../src/webhooks/configuration.ts';
import { GRANT_VERBS } from '../src/webhooks/grantor.ts';
import { WEBHOOK_PATHS } from '../src/webhooks/handlers.ts';

const root = join(import.meta.dirname, '..', '..', '..');
const docs = readFileSync(join(root, 'docs', 'permissions.md'), 'utf8');

/** The fenced blocks of one info string (```yaml), their text without the fences. */
function fenced(lang: string): string[] {
  return [...docs.matchAll(/^```([a-z]*)\n([\s\S]*?)^```$/gm)]
    .filter((m) => m[1] === lang)
    .map((m) => m[2] ?? '');
}

/** The first cells of the first table after `heading`, unquoted (header and rule skipped). */
function firstColumn(heading: string): string[] {
  const start = docs.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `docs/permissions.md has no "${heading}"`);
  const lines = docs.slice(start).split('\n');
  const first = lines.findIndex((l) => l.startsWith('|'));
  assert.ok(first >= 0, `no table after "${heading}"`);
  const out: string[] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    out.push((line.slice(1).split('|')[0] ?? '').trim());
  }
  return out;
}

/** The whole row of the first table after `heading` whose first cell contains `key`. */
function row(heading: string, key: string): string {
  const start = docs.indexOf(`\n${heading}\n`);
  const found = docs
    .slice(start)
    .split('\n')
    .find((l) => l.startsWith('|') && (l.slice(1).split('|')[0] ?? '').includes(key));
  assert.ok(found, `no row for ${key} after "${heading}"`);
  return found;
}

const unquote = (cell: string): string => cell.replace(/^`|`$/g, '');

/** The operator process's `--help` (the kit's manager flags, then the operator's own). */
function usage(): string {
  const r = spawnSync(process.execPath, [join(import.meta.dirname, '..', 'src', 'main.ts'), '--help'], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

/** Every object of every ```yaml block, as plain data (parsed once). */
const yamlObjects = (() => {
  let parsed: unknown[] | undefined;
  return (): unknown[] =>
    (parsed ??= fenced('yaml').flatMap((text) => parseAllDocuments(text).map((d) => d.toJS() as unknown)));
})();

type Sample = KubeObject & { spec: Record<string, unknown>; status?: Record<string, unknown> };

/** The samples of our kinds. */
function samples(): Sample[] {
  return yamlObjects().filter(
    (o): o is Sample => typeof o === 'object' && o !== null && (o as KubeObject).apiVersion === API_VERSION,
  );
}

const ofKind = <T>(kind: string): T[] => samples().filter((s) => s.kind === kind) as unknown as T[];

function sample<T>(kind: string, name: string): T {
  const found = samples().find((s) => s.kind === kind && s.metadata.name === name);
  assert.ok(found, `docs/permissions.md has no ${kind} ${name} sample`);
  return found as unknown as T;
}

/** Every CEL message in a schema, depth first. */
function celMessages(schema: JSONSchemaProps | undefined, out: string[] = []): string[] {
  if (!schema) return out;
  for (const v of schema['x-kubernetes-validations'] ?? []) if (v.message) out.push(v.message);
  for (const p of Object.values(schema.properties ?? {})) celMessages(p, out);
  const items = schema.items;
  if (items && !Array.isArray(items)) celMessages(items as JSONSchemaProps, out);
  const extra = schema.additionalProperties;
  if (extra && typeof extra === 'object') celMessages(extra as JSONSchemaProps, out);
  return out;
}

function openApiSchema(crd: KubeObject): JSONSchemaProps {
  const spec = crd.spec as { versions: { schema: { openAPIV3Schema: JSONSchemaProps } }[] };
  const schema = spec.versions[0]?.schema.openAPIV3Schema;
  assert.ok(schema);
  return schema;
}

describe('docs/permissions.md', () => {
  it('lists exactly the reasons of domain/reasons.ts', () => {
    assert.deepEqual(firstColumn('## Reasons').map(unquote).sort(), Object.values(Reason).sort());
  });

  it('lists exactly the PluginApplyStatus values the RoleStatus schema allows', () => {
    const userRole = permissionsCrds().find(
      (c) => (c.spec as { names: { kind: string } }).names.kind === 'UserRole',
    );
    assert.ok(userRole);
    // status.permissions → cluster → plugin → PluginObject.
    const byPermission = openApiSchema(userRole).properties?.status?.properties?.permissions;
    const byCluster = byPermission?.additionalProperties as JSONSchemaProps | undefined;
    const byPlugin = byCluster?.additionalProperties as JSONSchemaProps | undefined;
    const pluginObject = byPlugin?.additionalProperties as JSONSchemaProps | undefined;
    const values = (pluginObject?.properties?.status?.enum ?? []) as string[];
    assert.equal(values.length, 6);
    assert.deepEqual(firstColumn('### PluginApplyStatus').map(unquote).sort(), [...values].sort());
  });

  it('names every flag of USAGE with the default USAGE gives, and the environment variables', () => {
    const text = usage();
    const flags = [...new Set(text.match(/--[a-z][a-z-]*/g) ?? [])];
    assert.ok(flags.length >= 15, `USAGE lists too few flags: ${flags.join(' ')}`);
    const table = firstColumn('## The operator process').map(unquote);
    const documented = table.flatMap((cell) => cell.match(/--[a-z][a-z-]*/g) ?? []);
    assert.deepEqual([...new Set(documented)].sort(), flags.sort());
    for (const [, flag, fallback] of text.matchAll(/^\s+(--[a-z-]+)[^\n]*?default:? ([^\s,;]+)/gm)) {
      assert.ok(flag && fallback);
      assert.ok(
        row('## The operator process', flag).includes(`\`${fallback}\``),
        `the row of ${flag} does not give its default ${fallback}`,
      );
    }
    for (const variable of ['POD_NAMESPACE', 'ENABLE_WEBHOOKS', 'KUBECONFIG']) {
      assert.ok(text.includes(variable), `USAGE no longer names ${variable}`);
      assert.ok(docs.includes(`| \`${variable}\``), `${variable} is not in the environment table`);
    }
  });

  it('quotes every CEL message of the five CRDs word for word', () => {
    const messages = [...new Set(permissionsCrds().flatMap((crd) => celMessages(openApiSchema(crd))))];
    assert.ok(messages.length >= 40, `too few CEL messages found: ${messages.length}`);
    const missing = messages.filter((m) => !docs.includes(`\`${m}\``));
    assert.deepEqual(missing, []);
  });

  it('shows the names, labels and constants the code uses', () => {
    const expected = [
      platformClusterRoleName('acme', 'argocd-team-a'),
      platformRulesClusterRoleName('acme', 'argocd-team-a'),
      clientClusterRoleName('acme', 'deploy-viewer'),
      bindingName('UserRole', 'acme', 'alice-deploy', 'deploy-viewer'),
      bindingName('GroupRole', 'acme', 'sre', 'deploy-viewer'),
      bindingName('UserRole', 'acme', 'alice-argocd', 'argocd-team-a'),
      tenantScopeName('team-a'),
      tenantGetRoleName('team-a'),
      tenantEditRoleName('team-a'),
      tenantBindingName(
        {
          owner: { kind: 'UserRole', namespace: 'acme', name: 'alice-deploy', uid: '' },
          permission: 'deploy-viewer',
          subject: { kind: 'User', name: 'alice@example.com' },
        },
        'team-a',
      ),
      tenantBindingName(
        {
          owner: { kind: 'GroupRole', namespace: 'acme', name: 'data-science', uid: '' },
          permission: 'notebooks',
          subject: { kind: 'Group', name: 'data-science' },
        },
        'team-a',
      ),
      projectRoleName({
        kind: 'UserRole',
        namespace: 'acme',
        name: 'alice-argocd',
        permission: 'argocd-team-a',
      }),
      kubeflowObjectName('carol@example.com', 'edit'),
      kubeflowObjectName('alice.smith@example.com', 'edit'),
      scopeAnnotationKey('acme', 'prod-team-a'),
      scopeAnnotationKey('acme', 'tenant-team-a'),
      kubeconfigSecretName('prod-1'),
      ...Object.values(LABELS),
      MANAGED_BY,
      PERMISSION_LABEL,
      PLUGIN_LABEL,
      AGGREGATION_LABEL_PREFIX,
      SCOPE_ANNOTATION_PREFIX,
      FINALIZER,
      FIELD_MANAGER,
      LEASE_NAME,
      TENANT_CREATED,
      CONTROL_PLANE_AVAILABLE,
      ARGOCD_RBAC_CONFIGMAP,
      POLICY_CSV_KEY,
      POLICY_MARKER,
      ROLE_PREFIX,
      ROLE_DESCRIPTION_MARKER,
      USERID_HEADER,
      BUNDLE_ROOT,
      ...BUNDLE_PATHS,
      WEBHOOK_CONFIGURATION_NAME,
      ...Object.values(WEBHOOK_PATHS),
      ...GRANT_VERBS,
      TENANT_READABLE.join(', '),
      TENANT_EDITABLE.join(', '),
    ];
    const missing = expected.filter((s) => !docs.includes(s));
    assert.deepEqual(missing, []);
    assert.ok(
      docs.includes(`key \`${KUBECONFIG_KEY}\``),
      `the kubeconfig key ${KUBECONFIG_KEY} is not named`,
    );
  });

  it('states the webhook settings the ValidatingWebhookConfiguration has', () => {
    const config = webhookConfiguration({ url: 'https://127.0.0.1:9443', caBundle: '' }) as KubeObject & {
      webhooks: {
        failurePolicy: string;
        sideEffects: string;
        timeoutSeconds: number;
        matchPolicy: string;
        rules: { operations: string[] }[];
      }[];
    };
    assert.equal(config.webhooks.length, 5);
    for (const w of config.webhooks) {
      for (const setting of [
        `failurePolicy: ${w.failurePolicy}`,
        `sideEffects: ${w.sideEffects}`,
        `timeoutSeconds: ${w.timeoutSeconds}`,
        `matchPolicy: ${w.matchPolicy}`,
      ]) {
        assert.ok(docs.includes(`\`${setting}\``), `${setting} is not stated`);
      }
      assert.ok(
        docs.includes(
          w.rules[0]?.operations.includes('DELETE') ? 'CREATE`, `UPDATE` and `DELETE' : 'CREATE` and `UPDATE',
        ),
        `the operations ${w.rules[0]?.operations.join(', ')} are not stated`,
      );
    }
  });

  it('has a sample of each kind, each name once, and the samples pass the webhooks checks together', () => {
    const all = samples();
    for (const kind of ['Permission', 'Scope', 'UserRole', 'GroupRole', 'Tenant']) {
      assert.ok(
        all.some((s) => s.kind === kind),
        `no ${kind} sample`,
      );
    }
    const keys = all.map((s) => `${s.kind}/${s.metadata.namespace}/${s.metadata.name}`);
    assert.deepEqual(keys, [...new Set(keys)], 'two samples share a kind and a name');

    const permissions = ofKind<Permission>('Permission');
    const scopes = ofKind<Scope>('Scope');
    for (const kind of ['UserRole', 'GroupRole'] as const) {
      for (const role of ofKind<UserRole | GroupRole>(kind)) {
        const namespace = role.metadata.namespace ?? '';
        const decision = validateRole({
          kind,
          namespace,
          name: role.metadata.name ?? '',
          spec: role.spec,
          scope: scopes.find(
            (s) => s.metadata.name === role.spec.scope && s.metadata.namespace === namespace,
          ),
          permissions: new Map(
            role.spec.permissions.map((n) => [
              n,
              permissions.find((p) => p.metadata.name === n && p.metadata.namespace === namespace),
            ]),
          ),
          grantorMay: new Map(role.spec.permissions.map((n) => [n, true])),
          user: 'admin',
        });
        assert.deepEqual(decision, { allowed: true }, `${kind} ${role.metadata.name}`);
      }
    }
    const tenants = ofKind<Tenant>('Tenant');
    for (const tenant of tenants) {
      const decision = validateTenant({
        tenant,
        parent: tenants.find((t) => t.metadata.name === tenant.spec.parent),
        grantorMay: true,
        user: 'admin',
      });
      assert.deepEqual(decision, { allowed: true }, `Tenant ${tenant.metadata.name}`);
    }
  });

  it('shows as data.json what the model makes of the samples', () => {
    const engine = new StorageEngine();
    for (const p of ofKind<Permission>('Permission')) engine.upsertPermission(p);
    for (const s of ofKind<Scope>('Scope')) {
      // The samples' tenant Scope is the one its Tenant generates and controls (the sample
      // leaves the owner reference out): the feed would find it the Tenant's.
      const controlled = s.spec.tenantRef && s.metadata.name === `tenant-${s.spec.tenantRef.name}`;
      engine.upsertScope(s, {
        clusters: s.status?.clusters ?? [],
        paths: s.status?.paths ?? [],
        tenant: controlled ? (s.spec.tenantRef?.name ?? null) : null,
      });
    }
    for (const r of ofKind<UserRole>('UserRole')) engine.upsertRole('UserRole', r);
    for (const r of ofKind<GroupRole>('GroupRole')) engine.upsertRole('GroupRole', r);
    for (const t of ofKind<Tenant>('Tenant')) engine.upsertTenant(t);
    const shown = fenced('json').map((text) => JSON.parse(text) as unknown);
    assert.equal(shown.length, 1, 'one ```json block: data.json');
    assert.deepEqual(shown[0], JSON.parse(engine.dataJson()));
  });

  it("shows the policy.csv block and the AppProject role the Argo CD plugin writes for the samples' grant", () => {
    const role = sample<UserRole>('UserRole', 'alice-argocd');
    const permissionName = role.spec.permissions[0] ?? '';
    const permission = sample<Permission>('Permission', permissionName);
    const argocd = permission.spec.plugins?.argocd;
    assert.ok(argocd?.policies && argocd.projects?.[0]);
    const owner = {
      kind: 'UserRole' as const,
      namespace: role.metadata.namespace ?? '',
      name: role.metadata.name ?? '',
      permission: permissionName,
    };
    const lines = policyLines(role.spec.user, argocd.policies);
    assert.equal(lines.kind, 'ok');
    const block = mergePolicyCsv(undefined, owner, lines.kind === 'ok' ? lines.lines : []);
    assert.ok(fenced('').includes(block), `no plain block holds exactly:\n${block}`);

    const project = argocd.projects[0];
    const desired = projectRole(owner, project.project, role.spec.user, project.policies);
    assert.equal(desired.kind, 'ok');
    const shown = yamlObjects().find(
      (o): o is { spec: { roles: unknown[] } } =>
        typeof o === 'object' &&
        o !== null &&
        'spec' in o &&
        Array.isArray((o as { spec: { roles?: unknown } }).spec?.roles),
    );
    assert.ok(shown, 'no AppProject roles sample');
    assert.deepEqual(shown.spec.roles, [desired.kind === 'ok' ? desired.role : undefined]);
  });

  it('shows the sample policy the OPA tests run', () => {
    const policy = readFileSync(join(import.meta.dirname, 'support', 'policy', 'authz.rego'), 'utf8');
    assert.deepEqual(fenced('rego'), [policy]);
  });
});

describe('the yaml samples of docs/permissions.md on a real apiserver', () => {
  let env: TestEnv;
  before(async () => {
    env = await testEnv();
    await env.installCrds(permissionsCrds());
  });

  it('admits every sample of our kinds, and the status it shows through the status subresource', async (t) => {
    const namespace = await env.namespace(t, 'perm-docs');
    const all = samples();
    assert.ok(all.length >= 5);
    for (const s of all) {
      const { status, ...object } = s;
      const what = `${s.kind} ${s.metadata.name}`;
      const gvk = { apiVersion: s.apiVersion ?? '', kind: s.kind ?? '' };
      await env.admin
        .create({ ...object, metadata: { ...object.metadata, namespace } })
        .catch((e: unknown) => {
          throw new Error(`${what} was refused: ${String(e)}`);
        });
      if (status) {
        await env.admin
          .patchStatus(
            gvk,
            s.metadata.name ?? '',
            namespace,
            { type: 'merge', body: { status } },
            { dryRun: true },
          )
          .catch((e: unknown) => {
            throw new Error(`the status of ${what} was refused: ${String(e)}`);
          });
      }
    }
  });
});
