/**
 * A remote ClusterProvider's kubeconfig, checked before any client is built from it.
 *
 * It comes from a Secret (key `value`, then `value.yaml`, the Cluster API convention)
 * that anyone able to write Secrets in the operator's namespace controls. So anything
 * that would make the operator run a program (`exec`, the deprecated `auth-provider`)
 * or read a file on its own disk (`certificate-authority`, `client-certificate`,
 * `client-key`, `tokenFile`) is refused: credentials must be inline (`*-data`, `token`).
 */
import { parse } from 'yaml';

/** The Secret keys tried, in order. */
export const KUBECONFIG_KEYS = ['value', 'value.yaml'] as const;

export type KubeconfigCheck = { readonly ok: true } | { readonly ok: false; readonly message: string };

type Named<T> = { readonly name?: string } & T;
interface Doc {
  readonly 'current-context'?: string;
  readonly contexts?: readonly Named<{
    readonly context?: { readonly cluster?: string; readonly user?: string };
  }>[];
  readonly clusters?: readonly Named<{ readonly cluster?: Record<string, unknown> }>[];
  readonly users?: readonly Named<{ readonly user?: Record<string, unknown> }>[];
}

const FILE_FIELDS = {
  cluster: ['certificate-authority'],
  user: ['client-certificate', 'client-key', 'tokenFile'],
} as const;

export function checkKubeconfig(text: string): KubeconfigCheck {
  let doc: Doc;
  try {
    const parsed: unknown = parse(text);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      return { ok: false, message: 'the kubeconfig is not a YAML mapping' };
    }
    doc = parsed as Doc;
  } catch (err) {
    return {
      ok: false,
      message: `the kubeconfig does not parse: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
    };
  }
  const current = doc['current-context'];
  if (!current) return { ok: false, message: 'the kubeconfig has no current-context' };
  const ctx = doc.contexts?.find((c) => c.name === current)?.context;
  if (!ctx)
    return { ok: false, message: `the kubeconfig's current-context "${current}" is not among its contexts` };
  const cluster = doc.clusters?.find((c) => c.name === ctx.cluster)?.cluster;
  if (!cluster?.server)
    return {
      ok: false,
      message: `the kubeconfig's cluster "${ctx.cluster ?? ''}" is missing or has no server`,
    };
  const user = ctx.user === undefined ? {} : doc.users?.find((u) => u.name === ctx.user)?.user;
  if (user === undefined)
    return { ok: false, message: `the kubeconfig's user "${ctx.user}" is not among its users` };
  for (const f of FILE_FIELDS.cluster) {
    if (cluster[f] !== undefined)
      return { ok: false, message: `cluster.${f} reads a file on the operator's disk; use ${f}-data` };
  }
  if (user.exec !== undefined)
    return {
      ok: false,
      message: 'user.exec would run a program in the operator; use a token or a client certificate',
    };
  if (user['auth-provider'] !== undefined)
    return { ok: false, message: 'user.auth-provider is refused; use a token or a client certificate' };
  for (const f of FILE_FIELDS.user) {
    if (user[f] !== undefined) {
      return {
        ok: false,
        message: `user.${f} reads a file on the operator's disk; put the credential inline`,
      };
    }
  }
  return { ok: true };
}
