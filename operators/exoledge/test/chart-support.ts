/**
 * The chart as `helm template` renders it (the real helm binary, no apiserver): the
 * objects a release creates, parsed, with the CRD (`--include-crds`) and the helm test
 * hook apart. Shared by the chart's tests.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ApiErrorReason, isApiError, type KubeClient, type KubeObject } from '@operators/kit';
import { parseAllDocuments, stringify } from 'yaml';

export const CHART_DIR = join(import.meta.dirname, '..', 'chart');
export const run = promisify(execFile);

export interface RenderedChart {
  /** Everything `helm install` creates from templates/, in helm's order. */
  readonly objects: KubeObject[];
  /** chart/crds/, which helm installs first (and never upgrades). */
  readonly crds: KubeObject[];
  /** The `helm test` hooks. */
  readonly tests: KubeObject[];
}

/** Renders a chart (this one unless `chartDir` names another operator's) with `values`. */
export async function renderChart(
  helm: string,
  opts: { namespace: string; values?: Record<string, unknown>; release?: string; chartDir?: string },
): Promise<RenderedChart> {
  const dir = await mkdtemp(join(tmpdir(), 'chart-'));
  try {
    const valuesFile = join(dir, 'values.yaml');
    await writeFile(valuesFile, stringify(opts.values ?? {}));
    const { stdout } = await run(
      helm,
      [
        'template',
        opts.release ?? 'exoledge',
        opts.chartDir ?? CHART_DIR,
        '--namespace',
        opts.namespace,
        '--include-crds',
        '-f',
        valuesFile,
      ],
      { maxBuffer: 16 << 20 },
    );
    const all = parseAllDocuments(stdout)
      .map((d) => d.toJS() as KubeObject | null)
      .filter((o): o is KubeObject => !!o);
    const isTest = (o: KubeObject): boolean => o.metadata.annotations?.['helm.sh/hook'] === 'test';
    const isCrd = (o: KubeObject): boolean => o.kind === 'CustomResourceDefinition';
    return {
      objects: all.filter((o) => !isTest(o) && !isCrd(o)),
      crds: all.filter(isCrd),
      tests: all.filter(isTest),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export const RBAC_KINDS = new Set([
  'ServiceAccount',
  'Role',
  'RoleBinding',
  'ClusterRole',
  'ClusterRoleBinding',
]);

/** Applies objects as helm would (server-side, its field manager) and deletes the cluster-scoped ones after the test. */
export async function applyAll(
  admin: KubeClient,
  t: { after: (fn: () => Promise<void>) => void },
  objects: readonly KubeObject[],
  opts: { dryRun?: boolean } = {},
): Promise<void> {
  for (const o of objects) await admin.apply(o, { fieldManager: 'helm', force: true, ...opts });
  if (opts.dryRun) return;
  t.after(async () => {
    for (const o of objects.filter((x) => !x.metadata.namespace && x.kind !== 'CustomResourceDefinition'))
      await admin
        .delete({ apiVersion: o.apiVersion ?? '', kind: o.kind ?? '' }, o.metadata.name ?? '')
        .catch(() => undefined);
  });
}

// Rows and picks the chart tests compare rendered objects with (RBAC tables, names by kind).

export interface Rule {
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly resourceNames?: readonly string[];
  readonly nonResourceURLs?: readonly string[];
  readonly verbs: readonly string[];
}

/** One line per rule: `Kind namespace/name: group resource[names] verbs`. */
export function ruleRows(objects: readonly KubeObject[]): string[] {
  return objects
    .filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole')
    .flatMap((o) =>
      ((o as KubeObject & { rules: Rule[] | null }).rules ?? []).map((r) => {
        const where = `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`;
        const what = r.nonResourceURLs
          ? r.nonResourceURLs.join(',')
          : `${(r.apiGroups ?? []).join(',') || 'core'} ${(r.resources ?? []).join(',')}` +
            (r.resourceNames ? `[${r.resourceNames.join(',')}]` : '');
        return `${where}: ${what} ${r.verbs.join(',')}`;
      }),
    );
}

/** One line per binding: `Kind namespace/name -> RoleKind name: subjects`. */
export function bindingRows(objects: readonly KubeObject[]): string[] {
  return objects
    .filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding')
    .map((o) => {
      const b = o as KubeObject & {
        roleRef: { kind: string; name: string };
        subjects: { kind: string; name: string; namespace: string }[];
      };
      const subjects = b.subjects.map((s) => `${s.kind} ${s.namespace}/${s.name}`).join(',');
      return `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name} -> ${b.roleRef.kind} ${b.roleRef.name}: ${subjects}`;
    });
}

export const byKind = (objects: readonly KubeObject[], kind: string): KubeObject[] =>
  objects.filter((o) => o.kind === kind);
export const names = (objects: readonly KubeObject[]): string[] =>
  objects.map((o) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`);

/**
 * Records into `refused` every request of `client` that RBAC refused (403), with what it
 * asked, so a chart-RBAC test can name the missing grant. A 403 from NamespaceLifecycle is
 * not RBAC (anything new in a namespace being deleted, e.g. an Event written late into the
 * namespace of a test that has finished) and is left out.
 */
export function recordRbacRefusals(client: KubeClient, refused: string[]): void {
  const { transport } = client;
  const send = transport.request.bind(transport);
  transport.request = async <T>(opts: Parameters<typeof send>[0]): Promise<T> => {
    try {
      return await send<T>(opts);
    } catch (err) {
      const terminating = /because it is being terminated/.test(err instanceof Error ? err.message : '');
      if (isApiError(err, ApiErrorReason.Forbidden) && !terminating)
        refused.push(`${opts.method} ${opts.path}: ${err.message}`);
      throw err;
    }
  };
}

/** GET `path` on a local TLS port with a bearer token (the operators' authenticated metrics); any certificate. */
export function httpsGet(
  port: number,
  path: string,
  token: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        rejectUnauthorized: false,
        agent: false,
        headers: { authorization: `Bearer ${token}` },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * Runs `kubectl` against `kubeconfig` impersonating `user` (a helm test pod's
 * ServiceAccount, say); resolves its exit code and output instead of throwing.
 */
export async function kubectlAs(
  kubectl: string,
  kubeconfig: string,
  user: string,
  args: readonly string[],
): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(kubectl, ['--kubeconfig', kubeconfig, `--as=${user}`, ...args]);
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}
