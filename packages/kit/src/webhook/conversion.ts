/**
 * CRD conversion webhooks (`apiextensions.k8s.io/v1` ConversionReview): the apiserver
 * sends a list of objects and the apiVersion it wants them in; the webhook returns the
 * converted list, or a failure.
 *
 * Guarantees: all or nothing. Either every object is converted and the result is
 * `Success`, or the result is `Failure` with a message naming the object that failed
 * and no object at all is returned, never a half-converted list. Objects already in
 * the desired apiVersion are passed through without calling the handler. The handler's
 * output is checked before the apiserver sees it: the desired apiVersion, the same
 * kind, name, namespace and uid (the apiserver refuses any other metadata change except
 * labels and annotations, with a message that does not name the handler).
 *
 * Caveat: the apiserver converts on every read and write of a non-storage version and
 * during list and watch; a handler must be fast, pure and total (every served version
 * to every other): a failure here makes the objects unreadable in that version.
 */
import type { KubeObject } from '../client/types.ts';

export const CONVERSION_API_VERSION = 'apiextensions.k8s.io/v1';

export interface ConversionRequest {
  readonly uid: string;
  /** `group/version` the objects must be converted to. */
  readonly desiredAPIVersion: string;
  readonly objects: readonly KubeObject[];
}

export interface ConversionResponse {
  readonly uid: string;
  readonly convertedObjects: readonly KubeObject[];
  /** `status` is `Success` or `Failure` (metav1.Status), with a message on failure. */
  readonly result: { readonly status: 'Success' } | { readonly status: 'Failure'; readonly message: string };
}

export interface ConversionReview {
  readonly apiVersion: typeof CONVERSION_API_VERSION;
  readonly kind: 'ConversionReview';
  readonly request?: ConversionRequest;
  readonly response?: ConversionResponse;
}

/**
 * Converts one object into `desiredAPIVersion`. Throw to refuse (a version pair you do
 * not know, a value the target cannot hold): the whole review fails with your message.
 * Return a new object; the input is the request's, shared with nothing else.
 */
export type ConversionHandler = (
  object: KubeObject,
  desiredAPIVersion: string,
  ctx: { readonly signal: AbortSignal },
) => KubeObject | Promise<KubeObject>;

function describe(obj: KubeObject): string {
  const ns = obj.metadata?.namespace;
  return `${obj.kind ?? 'object'} ${ns ? `${ns}/` : ''}${obj.metadata?.name ?? '(unnamed)'}`;
}

function checked(input: KubeObject, output: KubeObject, desired: string): void {
  const problems: string[] = [];
  if (output?.apiVersion !== desired) problems.push(`apiVersion is ${output?.apiVersion}, not ${desired}`);
  if (output?.kind !== input.kind) problems.push(`kind changed from ${input.kind} to ${output?.kind}`);
  for (const f of ['name', 'namespace', 'uid'] as const) {
    if (output?.metadata?.[f] !== input.metadata?.[f]) problems.push(`metadata.${f} changed`);
  }
  if (problems.length > 0) throw new Error(`the converted object is wrong: ${problems.join('; ')}`);
}

/** The response to `request`: every object converted, or a failure naming the first that was not. */
export async function convertAll(
  request: ConversionRequest,
  handler: ConversionHandler,
  signal: AbortSignal,
): Promise<ConversionResponse> {
  const out: KubeObject[] = [];
  for (const obj of request.objects) {
    if (obj.apiVersion === request.desiredAPIVersion) {
      out.push(obj);
      continue;
    }
    try {
      const converted = await handler(obj, request.desiredAPIVersion, { signal });
      checked(obj, converted, request.desiredAPIVersion);
      out.push(converted);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      return {
        uid: request.uid,
        convertedObjects: [],
        result: {
          status: 'Failure',
          message: `converting ${describe(obj)} from ${obj.apiVersion} to ${request.desiredAPIVersion}: ${why}`,
        },
      };
    }
  }
  return { uid: request.uid, convertedObjects: out, result: { status: 'Success' } };
}
