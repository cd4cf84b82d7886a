/**
 * Whether a client cluster's kubeconfig (the `value` of its `<cluster>-kubeconfig`
 * Secret) may be used, decided before any client is built from it. Pure: text in,
 * verdict out.
 *
 * Whoever may write Secrets in a Cluster's namespace writes this text, and the operator
 * acts on it with its own process. So a kubeconfig is refused when it would make the
 * operator run a program (`user.exec`, `user.auth-provider`) or read a file from its own
 * disk (`certificate-authority`, `client-certificate`, `client-key`, `tokenFile`: the
 * operator's service-account token sent to a server of someone else's choosing).
 * Cluster API writes everything inline (`*-data`), so nothing it produces is refused.
 */
import { parse } from 'yaml';

export type KubeconfigVerdict = { readonly ok: true } | { readonly ok: false; readonly problem: string };

interface Entry<T> {
  readonly name?: unknown;
  readonly context?: T;
  readonly cluster?: T;
  readonly user?: T;
}
type Fields = Readonly<Record<string, unknown>>;

/** Fields that name a file on the reader's disk, per section. */
const FILE_FIELDS: Readonly<Record<'cluster' | 'user', readonly string[]>> = {
  cluster: ['certificate-authority'],
  user: ['client-certificate', 'client-key', 'tokenFile'],
};

/** Fields that run a program in the reader's process. */
const PROGRAM_FIELDS: readonly string[] = ['exec', 'auth-provider'];

export function checkKubeconfig(text: string): KubeconfigVerdict {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    const first = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    return refuse(`it is not YAML: ${first}`);
  }
  if (!isMapping(doc))
    return refuse('it is not a YAML mapping (a kubeconfig has clusters, users and contexts)');

  const current = doc['current-context'];
  if (typeof current !== 'string' || current === '') return refuse('it has no current-context');
  const context = section(doc, 'contexts', 'context', current);
  if (!context) return refuse(`its current-context "${current}" is not among its contexts`);

  const clusterName = context.cluster;
  const cluster =
    typeof clusterName === 'string' ? section(doc, 'clusters', 'cluster', clusterName) : undefined;
  if (!cluster)
    return refuse(
      `the cluster "${String(clusterName ?? '')}" of context "${current}" is not among its clusters`,
    );
  if (!serverUrl(cluster.server)) {
    return refuse(`the cluster "${String(clusterName)}" has no https:// or http:// server address`);
  }
  for (const f of FILE_FIELDS.cluster) {
    if (cluster[f] !== undefined)
      return refuse(`cluster.${f} would read a file on the operator's disk; use ${f}-data`);
  }

  const userName = context.user;
  if (userName === undefined || userName === '') return { ok: true };
  const user = typeof userName === 'string' ? section(doc, 'users', 'user', userName) : undefined;
  if (!user) return refuse(`the user "${String(userName)}" of context "${current}" is not among its users`);
  for (const f of PROGRAM_FIELDS) {
    if (user[f] !== undefined) {
      return refuse(`user.${f} would run a program in the operator; use a client certificate or a token`);
    }
  }
  for (const f of FILE_FIELDS.user) {
    if (user[f] !== undefined)
      return refuse(`user.${f} would read a file on the operator's disk; put it inline`);
  }
  return { ok: true };
}

function refuse(problem: string): KubeconfigVerdict {
  return { ok: false, problem };
}

function isMapping(v: unknown): v is Fields {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The body of the named entry of a list (`contexts[].context` of the one named `name`). */
function section(
  doc: Fields,
  list: 'contexts' | 'clusters' | 'users',
  body: 'context' | 'cluster' | 'user',
  name: string,
): Fields | undefined {
  const entries = doc[list];
  if (!Array.isArray(entries)) return undefined;
  const found = (entries as readonly Entry<unknown>[]).find((e) => isMapping(e) && e.name === name);
  const value = found?.[body];
  // A user with no fields at all (anonymous) is written `user: {}` or left empty.
  if (value === undefined || value === null) return body === 'user' && found ? {} : undefined;
  return isMapping(value) ? value : undefined;
}

function serverUrl(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  try {
    const u = new URL(v);
    return u.protocol === 'https:' || u.protocol === 'http:';
  } catch {
    return false;
  }
}
