/**
 * The source cluster of each ClusterProvider. No `spec.kubeConfig`: the operator's own
 * cluster, through its own client. Otherwise a kubeconfig from a Secret in the
 * OPERATOR's namespace (key `value`, then `value.yaml`), checked (inline credentials
 * only) before a client is built, and the client rebuilt when the Secret or qps/burst
 * change. Namespace labels for the gate are never read here: they come from the control
 * cluster, whatever the source.
 */
import { createHash } from 'node:crypto';
import { KubeClient, type KubeObject } from '@operators/kit';
import type { ClusterProvider } from '../api/cluster-provider.ts';
import { checkKubeconfig, KUBECONFIG_KEYS } from '../domain/kubeconfig.ts';

export type SourceClient =
  | { ok: true; client: KubeClient; fingerprint: string }
  | { ok: false; message: string };

export class SourceClients {
  private readonly local: KubeClient;
  private readonly operatorNamespace: string;
  private readonly readSecret: (namespace: string, name: string) => Promise<KubeObject | undefined>;
  private readonly remote = new Map<string, { fingerprint: string; client: KubeClient }>();

  constructor(opts: {
    local: KubeClient;
    operatorNamespace: string;
    readSecret: (namespace: string, name: string) => Promise<KubeObject | undefined>;
  }) {
    this.local = opts.local;
    this.operatorNamespace = opts.operatorNamespace;
    this.readSecret = opts.readSecret;
  }

  async forProvider(provider: ClusterProvider): Promise<SourceClient> {
    const ref = provider.spec.kubeConfig?.secretRef;
    if (!ref) return { ok: true, client: this.local, fingerprint: 'local' };
    const secret = await this.readSecret(this.operatorNamespace, ref.name);
    if (!secret) {
      return {
        ok: false,
        message: `the kubeconfig Secret "${ref.name}" does not exist in the operator's namespace "${this.operatorNamespace}"`,
      };
    }
    const data = (secret as { data?: Record<string, string> }).data ?? {};
    const keys = ref.key ? [ref.key] : KUBECONFIG_KEYS;
    const key = keys.find((k) => data[k] !== undefined);
    if (!key)
      return {
        ok: false,
        message: `the kubeconfig Secret "${ref.name}" has no key ${keys.map((k) => `"${k}"`).join(' or ')}`,
      };
    const text = Buffer.from(data[key] ?? '', 'base64').toString('utf8');
    const check = checkKubeconfig(text);
    if (!check.ok)
      return {
        ok: false,
        message: `the kubeconfig in Secret "${ref.name}" (key "${key}"): ${check.message}`,
      };
    const { qps, burst } = provider.spec;
    const fingerprint = createHash('sha256')
      .update(JSON.stringify([text, qps ?? null, burst ?? null]))
      .digest('hex');
    const name = provider.metadata.name ?? '';
    const cur = this.remote.get(name);
    if (cur?.fingerprint === fingerprint) return { ok: true, client: cur.client, fingerprint };
    try {
      const client = await KubeClient.fromKubeconfigString(text, {
        ...(qps ? { rateLimit: { qps, burst: burst ?? Math.max(1, Math.ceil(qps * 1.5)) } } : {}),
      });
      this.remote.set(name, { fingerprint, client });
      return { ok: true, client, fingerprint };
    } catch (err) {
      return {
        ok: false,
        message: `the kubeconfig in Secret "${ref.name}" cannot be used: ${err instanceof Error ? err.message : String(err)}`,
      };
    }
  }
}
