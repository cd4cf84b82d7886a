/**
 * Puts the CA that signed the webhook's serving certificate where the apiserver looks
 * for it: `webhooks[*].clientConfig.caBundle` of a Validating/MutatingWebhookConfiguration
 * and `spec.conversion.webhook.clientConfig.caBundle` of a CRD. For tests and local runs;
 * in a chart, cert-manager's CA injector does the same from the annotation
 * `cert-manager.io/inject-ca-from: <namespace>/<certificate>` (docs/kit.md, Webhooks).
 *
 * Server-side apply under its own field manager: the injector owns `caBundle` and nothing
 * else, so the chart (or whoever applied the configuration) keeps owning the rules,
 * selectors and policies, and a later apply of theirs that omits `caBundle` does not
 * remove it. `force` takes the field from a manager that set it before (a placeholder
 * in a manifest), as the CA injector does. Every webhook of a configuration gets the
 * bundle: they are served by one server with one certificate.
 */
import type { KubeClient } from '../client/client.ts';
import type { KubeObject } from '../client/types.ts';

export const VALIDATING_WEBHOOK_CONFIGURATION = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingWebhookConfiguration',
} as const;
export const MUTATING_WEBHOOK_CONFIGURATION = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'MutatingWebhookConfiguration',
} as const;
export const CUSTOM_RESOURCE_DEFINITION = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
} as const;

export interface CaBundleTargets {
  readonly validatingWebhookConfigurations?: readonly string[];
  readonly mutatingWebhookConfigurations?: readonly string[];
  /** CRDs whose conversion webhook the server answers (`spec.conversion.strategy: Webhook`). */
  readonly customResourceDefinitions?: readonly string[];
}

export interface InjectCaBundleOptions {
  /** Default `kit-ca-injector`. */
  readonly fieldManager?: string;
}

/** The `caBundle` value: base64 of the PEM text, as the API field is `[]byte`. */
export function caBundleOf(caPem: string): string {
  return Buffer.from(caPem).toString('base64');
}

/**
 * Applies `caPem` as the caBundle of every webhook of the named configurations and of
 * the named CRDs' conversion webhooks.
 *
 * @throws ApiError NotFound when a named object does not exist; Invalid for a CRD whose
 *   conversion strategy is not `Webhook`.
 */
export async function injectCaBundle(
  client: KubeClient,
  caPem: string,
  targets: CaBundleTargets,
  opts: InjectCaBundleOptions = {},
): Promise<void> {
  const caBundle = caBundleOf(caPem);
  const apply = { fieldManager: opts.fieldManager ?? 'kit-ca-injector', force: true };
  const configurations = [
    ...(targets.validatingWebhookConfigurations ?? []).map((name) => ({
      gvk: VALIDATING_WEBHOOK_CONFIGURATION,
      name,
    })),
    ...(targets.mutatingWebhookConfigurations ?? []).map((name) => ({
      gvk: MUTATING_WEBHOOK_CONFIGURATION,
      name,
    })),
  ];
  for (const { gvk, name } of configurations) {
    const live = await client.get<KubeObject & { webhooks?: readonly { name: string }[] }>(gvk, name);
    // `webhooks` is a list keyed by name: each entry names its webhook and sets only the bundle.
    await client.apply(
      {
        ...gvk,
        metadata: { name },
        webhooks: (live.webhooks ?? []).map((w) => ({ name: w.name, clientConfig: { caBundle } })),
      },
      apply,
    );
  }
  for (const name of targets.customResourceDefinitions ?? []) {
    await client.apply(
      {
        ...CUSTOM_RESOURCE_DEFINITION,
        metadata: { name },
        spec: { conversion: { webhook: { clientConfig: { caBundle } } } },
      },
      apply,
    );
  }
}
