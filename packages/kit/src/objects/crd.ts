/**
 * CustomResourceDefinitions written in TypeScript: the one source from which an
 * operator's `crds/*.yaml` is generated (and checked for drift by a test), so the
 * schema, its CEL validation rules and the operator's types live side by side.
 */
import { stringify } from 'yaml';
import type { KubeObject } from '../client/types.ts';

/** One `x-kubernetes-validations` rule: CEL evaluated by the apiserver at admission. */
export interface ValidationRule {
  readonly rule: string;
  readonly message?: string;
  readonly messageExpression?: string;
  readonly reason?:
    | 'FieldValueInvalid'
    | 'FieldValueForbidden'
    | 'FieldValueRequired'
    | 'FieldValueDuplicate';
  readonly fieldPath?: string;
  readonly optionalOldSelf?: boolean;
}

/** The structural-schema subset of OpenAPI v3 that CRDs accept. */
export interface JSONSchemaProps {
  readonly type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  readonly description?: string;
  readonly properties?: Readonly<Record<string, JSONSchemaProps>>;
  readonly additionalProperties?: JSONSchemaProps | boolean;
  readonly items?: JSONSchemaProps;
  readonly required?: readonly string[];
  readonly enum?: readonly (string | number | boolean)[];
  readonly default?: unknown;
  readonly format?: string;
  readonly pattern?: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly exclusiveMinimum?: boolean;
  readonly exclusiveMaximum?: boolean;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly minProperties?: number;
  readonly maxProperties?: number;
  readonly nullable?: boolean;
  readonly anyOf?: readonly JSONSchemaProps[];
  readonly oneOf?: readonly JSONSchemaProps[];
  readonly allOf?: readonly JSONSchemaProps[];
  readonly not?: JSONSchemaProps;
  readonly 'x-kubernetes-validations'?: readonly ValidationRule[];
  readonly 'x-kubernetes-preserve-unknown-fields'?: boolean;
  readonly 'x-kubernetes-int-or-string'?: boolean;
  readonly 'x-kubernetes-embedded-resource'?: boolean;
  readonly 'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  readonly 'x-kubernetes-list-map-keys'?: readonly string[];
  readonly 'x-kubernetes-map-type'?: 'atomic' | 'granular';
}

export interface PrinterColumn {
  readonly name: string;
  readonly type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  readonly jsonPath: string;
  readonly description?: string;
  readonly priority?: number;
}

export interface CrdVersion {
  readonly name: string;
  readonly served?: boolean;
  readonly storage?: boolean;
  /** The schema of the whole object; `spec` and `status` under `properties`. */
  readonly schema: JSONSchemaProps;
  readonly statusSubresource?: boolean;
  readonly printerColumns?: readonly PrinterColumn[];
}

export interface CrdDefinition {
  readonly group: string;
  readonly kind: string;
  readonly plural: string;
  readonly singular?: string;
  readonly shortNames?: readonly string[];
  readonly categories?: readonly string[];
  readonly scope: 'Namespaced' | 'Cluster';
  readonly versions: readonly CrdVersion[];
}

/** The CustomResourceDefinition object for `def` (served and stored at its first version unless stated). */
export function customResourceDefinition(def: CrdDefinition): KubeObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${def.plural}.${def.group}` },
    spec: {
      group: def.group,
      scope: def.scope,
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular ?? def.kind.toLowerCase(),
        ...(def.shortNames ? { shortNames: def.shortNames } : {}),
        ...(def.categories ? { categories: def.categories } : {}),
      },
      versions: def.versions.map((v, i) => ({
        name: v.name,
        served: v.served ?? true,
        storage: v.storage ?? i === 0,
        schema: { openAPIV3Schema: v.schema },
        ...(v.statusSubresource !== false ? { subresources: { status: {} } } : {}),
        ...(v.printerColumns ? { additionalPrinterColumns: v.printerColumns } : {}),
      })),
    },
  };
}

/** Stable YAML for committed CRD files, with a header saying where it comes from. */
export function crdYaml(crds: readonly KubeObject[], source: string): string {
  const header = `# Generated from ${source}; do not edit. Regenerate with the operator's gen-crds script.\n`;
  return header + crds.map((c) => `---\n${stringify(c, { lineWidth: 0 })}`).join('');
}
