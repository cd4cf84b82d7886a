/**
 * The sample requests of `check-rules --samples`: their format, read strictly (a sample
 * that does not say what it is for is refused, never guessed), and the judgement of a
 * policy verdict against what the sample expects. docs/weebo-link.md (check-rules) shows
 * the format with an example.
 */
import type { KubeObject } from '@operators/kit';
import type { AdmissionRequest, AdmissionVerdict, PolicyDenial, RequestResource } from './policy.ts';
import { isRecord } from './rules.ts';

/**
 * What a sample expects of the policies:
 * - `allowed`: the policies see the request and admit it;
 * - `denied`: the policies see the request and a binding with Deny refuses it;
 * - `not-covered`: no policy sees the request (it is left to RBAC alone).
 */
export const SAMPLE_EXPECTATIONS = ['allowed', 'denied', 'not-covered'] as const;
export type SampleExpectation = (typeof SAMPLE_EXPECTATIONS)[number];

const OPERATIONS = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'] as const;

export interface Sample {
  readonly name: string;
  readonly request: AdmissionRequest;
  readonly expect: SampleExpectation;
}

export interface SampleProblem {
  /** The sample's name, or its position when it has none. */
  readonly sample: string;
  readonly problems: readonly string[];
}

/**
 * The samples of a parsed YAML document (a list). Each malformed sample is a problem naming
 * it and every field at fault; the well-formed ones are still returned.
 */
export function readSamples(doc: unknown): {
  samples: Sample[];
  problems: SampleProblem[];
  documentError?: string;
} {
  if (!Array.isArray(doc) || doc.length === 0)
    return {
      samples: [],
      problems: [],
      documentError: 'the samples file must be a non-empty YAML list of samples',
    };
  const samples: Sample[] = [];
  const problems: SampleProblem[] = [];
  doc.forEach((raw: unknown, i) => {
    const label = isRecord(raw) && typeof raw.name === 'string' && raw.name ? raw.name : `#${i + 1}`;
    const p: string[] = [];
    if (!isRecord(raw)) {
      problems.push({ sample: label, problems: ['a sample is a map (name, resource, operation, ...)'] });
      return;
    }
    if (typeof raw.name !== 'string' || !raw.name) p.push('name: required, a non-empty string');
    const resource = readResource(raw.resource, p);
    const operation = raw.operation;
    if (!OPERATIONS.includes(operation as (typeof OPERATIONS)[number]))
      p.push(`operation: one of ${OPERATIONS.join(', ')}`);
    if (typeof raw.username !== 'string' || !raw.username) p.push('username: required, the requesting user');
    if (
      raw.groups !== undefined &&
      !(Array.isArray(raw.groups) && raw.groups.every((g) => typeof g === 'string'))
    )
      p.push('groups: a list of strings');
    const object = readObject(raw.object, 'object', p);
    const oldObject = readObject(raw.oldObject, 'oldObject', p);
    if (operation === 'CREATE' && !object) p.push('object: required for CREATE');
    if (operation === 'UPDATE' && (!object || !oldObject))
      p.push('object and oldObject: both required for UPDATE');
    if (operation === 'DELETE' && !oldObject) p.push('oldObject: required for DELETE (the object deleted)');
    if (raw.namespace !== undefined && typeof raw.namespace !== 'string') p.push('namespace: a string');
    if (
      raw.namespaceLabels !== undefined &&
      !(
        isRecord(raw.namespaceLabels) &&
        Object.values(raw.namespaceLabels).every((v) => typeof v === 'string')
      )
    )
      p.push('namespaceLabels: a map of strings');
    if (!SAMPLE_EXPECTATIONS.includes(raw.expect as SampleExpectation))
      p.push(`expect: one of ${SAMPLE_EXPECTATIONS.join(', ')}`);
    if (p.length || !resource) {
      problems.push({ sample: label, problems: p });
      return;
    }
    const namespace =
      typeof raw.namespace === 'string' ? raw.namespace : (object ?? oldObject)?.metadata.namespace;
    samples.push({
      name: label,
      expect: raw.expect as SampleExpectation,
      request: {
        operation: operation as AdmissionRequest['operation'],
        resource,
        ...(namespace ? { namespace } : {}),
        ...(isRecord(raw.namespaceLabels)
          ? { namespaceLabels: raw.namespaceLabels as Record<string, string> }
          : {}),
        object: object ?? null,
        oldObject: oldObject ?? null,
        userInfo: {
          username: raw.username as string,
          ...(Array.isArray(raw.groups) ? { groups: raw.groups as string[] } : {}),
        },
      },
    });
  });
  return { samples, problems };
}

function readResource(v: unknown, p: string[]): RequestResource | undefined {
  const form =
    'resource: required, the resource the request is for as the apiserver matches it: {group, version, resource, subresource?} (group "" for the core group, resource the plural, e.g. {group: stalwart.weebo.io, version: v1alpha1, resource: stalwartaccounts})';
  if (!isRecord(v)) {
    p.push(form);
    return undefined;
  }
  const bad: string[] = [];
  if (typeof v.group !== 'string') bad.push('group');
  if (typeof v.version !== 'string' || !v.version) bad.push('version');
  if (typeof v.resource !== 'string' || !v.resource || v.resource.includes('/')) bad.push('resource');
  if (v.subresource !== undefined && (typeof v.subresource !== 'string' || !v.subresource))
    bad.push('subresource');
  if (bad.length) {
    p.push(`${form}; missing or wrong: ${bad.join(', ')}`);
    return undefined;
  }
  return {
    group: v.group as string,
    version: v.version as string,
    resource: v.resource as string,
    ...(typeof v.subresource === 'string' ? { subresource: v.subresource } : {}),
  };
}

function readObject(v: unknown, field: string, p: string[]): KubeObject | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isRecord(v) || !isRecord(v.metadata)) {
    p.push(`${field}: a Kubernetes object with metadata`);
    return undefined;
  }
  return v as unknown as KubeObject;
}

/** A sample's result: what the policies answered, and whether that is what it expected. */
export interface SampleOutcome {
  /** The verdict is the one the sample expects. */
  readonly ok: boolean;
  readonly got: SampleExpectation;
  /** The denying policies and messages, the unenforced ones, or why nothing matched. */
  readonly detail: string;
}

const describe = (d: PolicyDenial): string => `${d.policy}: ${d.message}`;

export function judgeSample(sample: Sample, verdict: AdmissionVerdict): SampleOutcome {
  const got: SampleExpectation = verdict.kind;
  let detail = '';
  if (verdict.kind === 'denied') detail = verdict.denials.map(describe).join('; ');
  else if (verdict.kind === 'allowed' && verdict.unenforced.length)
    detail = verdict.unenforced
      .map(
        (d) =>
          `${d.policy} would deny but its binding ${d.binding} is ${d.actions.join(', ') || 'without actions'}: ${d.message}`,
      )
      .join('; ');
  else if (verdict.kind === 'not-covered')
    detail = `no policy's matchConstraints and binding's matchResources match ${operationOn(sample.request)}`;
  return { ok: got === sample.expect, got, detail };
}

function operationOn(r: AdmissionRequest): string {
  const { group, version, resource, subresource } = r.resource;
  const gvr = `${group || 'core'}/${version}/${resource}${subresource ? `/${subresource}` : ''}`;
  return `${r.operation} ${gvr}${r.namespace ? ` in namespace ${r.namespace}` : ''}`;
}
