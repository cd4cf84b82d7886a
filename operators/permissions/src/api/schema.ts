/**
 * Schema pieces the five permissions.shturval.tech CRDs share: names, cluster ids and
 * targets, policy rules, the plugins a Permission feeds, RoleStatus, the printer columns
 * and the whole-object wrapper.
 *
 * Every piece is a function that builds a fresh object: a shared object would come out
 * of the YAML writer as an anchor and alias, which reads badly in a generated file. The
 * CEL messages name the field (the caller passes its path) and say what to write instead.
 *
 * The regexes are embedded in single-quoted CEL strings, so none may contain a quote or
 * a backslash; POSIX classes (`[[:cntrl:]]`) stand in for escapes. No description or
 * message mixes single and double quotes: the YAML writer would have to escape one of
 * them, and the formatter rewrites such scalars.
 */
import {
  DNS_LABEL_REGEX,
  DNS_SUBDOMAIN_REGEX,
  type JSONSchemaProps,
  conditionsSchema as kitConditionsSchema,
  LABEL_KEY_REGEX,
  observedGenerationSchema,
  type PrinterColumn,
  type ValidationRule,
} from '@operators/kit';
import { API_VERSION, LEVELS } from './common.ts';
import { PLATFORM, type PluginApplyStatus } from './role-status.ts';

export {
  DNS_LABEL_REGEX,
  DNS_SUBDOMAIN_REGEX,
  labelSelectorSchema,
  observedGenerationSchema,
} from '@operators/kit';

/** The category of every kind: `kubectl get shturval` lists them all. */
export const CATEGORIES: readonly string[] = ['shturval'];

/**
 * A client cluster's id: `<namespace>/<name>` of its Cluster API `Cluster` (a namespace
 * name, a slash, an object name).
 */
export const CLUSTER_ID_REGEX = `${DNS_LABEL_REGEX.slice(0, -1)}/${DNS_SUBDOMAIN_REGEX.slice(1)}`;
/** The longest cluster id: a 63-character namespace, the slash, a 253-character name. */
export const MAX_CLUSTER_ID = 63 + 1 + 253;

/** The most policy rules one list of a Permission holds. */
export const MAX_RULES = 128;
/** The most entries of one list inside a policy rule (verbs, resources...). */
export const MAX_RULE_ITEMS = 64;
/** The most names in one list of names (permissions, namespaces, cluster ids, members). */
export const MAX_NAMES = 256;
/** The longest user or group name, and the longest subject in a list. */
export const MAX_SUBJECT = 1024;

/**
 * Argo CD policy fields become columns of `policy.csv` lines: a comma, quote or line
 * break would let one Permission write other lines, so only the characters Argo CD's
 * resources, actions and object globs use are taken.
 */
export const ARGOCD_FIELD_REGEX = '^[-a-zA-Z0-9_.*?/:@]+$';

/** A required object name (a DNS subdomain): the name of a Permission, a Scope, a Tenant. */
export function objectNameSchema(field: string, description: string): JSONSchemaProps {
  return {
    type: 'string',
    maxLength: 253,
    description,
    'x-kubernetes-validations': [
      {
        rule: `self.matches('${DNS_SUBDOMAIN_REGEX}')`,
        message: `${field} must be an object name: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit`,
      },
    ],
  };
}

/** A namespace's name (a DNS label of at most 63 characters). */
export function namespaceNameSchema(field: string, description: string): JSONSchemaProps {
  return {
    type: 'string',
    maxLength: 63,
    description,
    'x-kubernetes-validations': [
      {
        rule: `self.matches('${DNS_LABEL_REGEX}')`,
        message: `${field} must be a namespace name: lowercase letters, digits and '-', starting and ending with a letter or digit`,
      },
    ],
  };
}

/** A list of object names, each at most once. */
export function objectNamesSchema(
  field: string,
  description: string,
  itemDescription: string,
): JSONSchemaProps {
  return {
    type: 'array',
    maxItems: MAX_NAMES,
    'x-kubernetes-list-type': 'set',
    description,
    items: objectNameSchema(field, itemDescription),
  };
}

/** A user or group name as the authenticator reports it: anything but empty. */
export function subjectSchema(field: string, description: string): JSONSchemaProps {
  return {
    type: 'string',
    maxLength: MAX_SUBJECT,
    description,
    'x-kubernetes-validations': [{ rule: 'size(self) > 0', message: `${field} must not be empty` }],
  };
}

/** A list of user names, each at most once. */
export function subjectsSchema(field: string, description: string): JSONSchemaProps {
  return {
    type: 'array',
    maxItems: MAX_NAMES,
    'x-kubernetes-list-type': 'set',
    description,
    items: subjectSchema(`${field} entries`, 'A user name as the authenticator reports it.'),
  };
}

/** The level of a Permission or a Scope. */
export function levelSchema(description: string): JSONSchemaProps {
  return {
    type: 'string',
    enum: LEVELS,
    description: `${description} platform: the management cluster; cluster: whole client clusters; namespace: namespaces of client clusters.`,
  };
}

export interface LocalRefOptions {
  /** The reference's path from the object: `spec.tenantRef`. */
  readonly field: string;
  readonly description: string;
  /** What `name` names: 'The name of a Tenant in the same namespace.' */
  readonly nameDescription: string;
}

/** `{name}` of an object in the referring object's namespace. */
export function localRefSchema(o: LocalRefOptions): JSONSchemaProps {
  return {
    type: 'object',
    required: ['name'],
    description: o.description,
    properties: { name: objectNameSchema(`${o.field}.name`, o.nameDescription) },
  };
}

/**
 * A transition rule: the field may not change once the object exists. It holds on the
 * field itself, so it runs whenever the field exists before and after the update; a
 * required field thus cannot escape it by being removed.
 */
export function immutableRule(field: string, kind: string): ValidationRule {
  return { rule: 'self == oldSelf', message: `${field} is immutable: delete and recreate the ${kind}` };
}

/** `self.<name>` is present and not empty (a list or a string). */
export function nonEmpty(name: string): string {
  return `(has(self.${name}) && size(self.${name}) > 0)`;
}

/** Strings of a policy rule list: entries of at most 253 characters, at most {@link MAX_RULE_ITEMS}. */
function ruleStrings(description: string, allowEmpty: boolean): JSONSchemaProps {
  return {
    type: 'array',
    maxItems: MAX_RULE_ITEMS,
    description,
    items: { type: 'string', maxLength: 253, ...(allowEmpty ? {} : { minLength: 1 }) },
  };
}

/**
 * rbac.authorization.k8s.io/v1 PolicyRule, with CEL rules that refuse what the apiserver
 * would refuse in a ClusterRole (pkg/apis/rbac/validation), so a bad rule is refused on
 * the Permission instead of failing later in every cluster. `field` is the list's path.
 */
export function policyRuleSchema(field: string): JSONSchemaProps {
  return {
    type: 'object',
    description:
      'One RBAC policy rule, as in a ClusterRole: verbs on resources of apiGroups (optionally only the ' +
      'named resourceNames), or verbs on nonResourceURLs.',
    required: ['verbs'],
    properties: {
      apiGroups: ruleStrings(
        'API groups of the resources; an empty string is the core group, * any group.',
        true,
      ),
      resources: ruleStrings('Resources (plural, such as pods or deployments/scale); * any resource.', false),
      resourceNames: ruleStrings('Only these objects of the resources; absent: all of them.', false),
      nonResourceURLs: ruleStrings('URL paths that are not resources, such as /healthz or /api/*.', false),
      verbs: ruleStrings('Verbs such as get, list, watch, create, update, patch, delete; * any verb.', false),
    },
    'x-kubernetes-validations': [
      { rule: nonEmpty('verbs'), message: `${field}[].verbs must name at least one verb` },
      {
        rule: `${nonEmpty('resources')} != ${nonEmpty('nonResourceURLs')}`,
        message: `${field}[] must name either resources or nonResourceURLs: one of them, not both`,
      },
      {
        rule: `!${nonEmpty('resources')} || ${nonEmpty('apiGroups')}`,
        message: `${field}[] names resources, so it must name their apiGroups: an empty string is the core group`,
      },
      {
        rule: `!${nonEmpty('nonResourceURLs')} || (!${nonEmpty('apiGroups')} && !${nonEmpty('resourceNames')})`,
        message: `${field}[] names nonResourceURLs, so it takes no apiGroups and no resourceNames`,
      },
    ],
  };
}

/** A list of policy rules. */
export function policyRulesSchema(field: string, description: string): JSONSchemaProps {
  return { type: 'array', maxItems: MAX_RULES, description, items: policyRuleSchema(field) };
}

/** Which Cluster API clusters: by id and/or by annotations (see `ClusterTargets`). `field` is its path. */
export function clusterTargetsSchema(field: string, description: string): JSONSchemaProps {
  return {
    type: 'object',
    description: `${description} Both ids and annotations absent: every client cluster whose control plane is ready.`,
    properties: {
      ids: {
        type: 'array',
        maxItems: MAX_NAMES,
        'x-kubernetes-list-type': 'set',
        description:
          'Cluster ids: the namespace and name of each Cluster API Cluster, as <namespace>/<name>. A cluster ' +
          'must be one of them (when given) and carry every annotation (when given).',
        items: {
          type: 'string',
          maxLength: MAX_CLUSTER_ID,
          'x-kubernetes-validations': [
            {
              rule: `self.matches('${CLUSTER_ID_REGEX}')`,
              message: `${field}.ids must be cluster ids: the namespace and name of a Cluster API Cluster, as namespace/name`,
            },
          ],
        },
      },
      annotations: {
        type: 'object',
        maxProperties: 32,
        description: 'Annotations a Cluster API Cluster must carry, with exactly these values.',
        additionalProperties: { type: 'string', maxLength: 1024 },
        'x-kubernetes-validations': [
          {
            rule: `self.all(k, k.size() <= 317 && k.matches('${LABEL_KEY_REGEX}'))`,
            message: `${field}.annotations keys must be annotation keys, such as zone or example.com/zone`,
          },
        ],
      },
    },
  };
}

/** One field of an Argo CD policy: a column of a `policy.csv` line. */
function argoCdFieldSchema(field: string, description: string): JSONSchemaProps {
  return {
    type: 'string',
    maxLength: 253,
    description,
    'x-kubernetes-validations': [
      {
        rule: `self.matches('${ARGOCD_FIELD_REGEX}')`,
        message: `${field} must be one policy.csv column: letters, digits and - _ . * ? / : @ only`,
      },
    ],
  };
}

function argoCdPoliciesSchema(field: string, description: string): JSONSchemaProps {
  return {
    type: 'array',
    maxItems: MAX_RULE_ITEMS,
    description,
    items: {
      type: 'object',
      description: 'One Argo CD policy line, allowing the subject the action on the resource and object.',
      required: ['resource', 'action', 'object'],
      properties: {
        resource: argoCdFieldSchema(
          `${field}[].resource`,
          'The Argo CD resource: applications, applicationsets, clusters, repositories, projects, logs, exec...',
        ),
        action: argoCdFieldSchema(
          `${field}[].action`,
          'The action: get, create, update, delete, sync, override, action/<group>/<kind>/<name>, or *.',
        ),
        object: argoCdFieldSchema(
          `${field}[].object`,
          'The object, such as <project>/<application> or *; glob patterns as Argo CD takes them.',
        ),
      },
    },
  };
}

/** `spec.plugins` of a Permission: what each plugin grants for it. */
export function pluginsSchema(): JSONSchemaProps {
  return {
    type: 'object',
    description:
      'The plugins this Permission feeds, each with what it grants. Absent: rbac only. A plugin that is not ' +
      'named grants nothing for this Permission.',
    properties: {
      rbac: {
        type: 'object',
        description:
          'Bind the subject to this Permission: a ClusterRoleBinding (platform and cluster levels) or a ' +
          'RoleBinding in each namespace of the Scope (namespace level), in each target cluster.',
      },
      argocd: {
        type: 'object',
        description:
          'Argo CD on the management cluster: lines in the policy.csv of argocd-rbac-cm owned by the operator, ' +
          'and roles in AppProjects.',
        properties: {
          policies: argoCdPoliciesSchema(
            'spec.plugins.argocd.policies',
            'Lines of policy.csv for the subject: p, subject, resource, action, object, allow.',
          ),
          projects: {
            type: 'array',
            maxItems: MAX_RULE_ITEMS,
            'x-kubernetes-list-type': 'map',
            'x-kubernetes-list-map-keys': ['project'],
            description: 'Roles in AppProjects, granted to the subject.',
            items: {
              type: 'object',
              description: 'A role in one AppProject.',
              required: ['project', 'policies'],
              properties: {
                project: objectNameSchema(
                  'spec.plugins.argocd.projects[].project',
                  'The AppProject, in the Argo CD namespace.',
                ),
                policies: argoCdPoliciesSchema(
                  'spec.plugins.argocd.projects[].policies',
                  'The policies of the project role; objects are relative to the project.',
                ),
              },
            },
          },
        },
      },
      kubeflow: {
        type: 'object',
        description:
          'Access to Kubeflow profiles: a RoleBinding to kubeflow-<role> in each profile namespace of the Scope ' +
          'with the annotations KFAM reads, and an Istio AuthorizationPolicy per user.',
        required: ['role'],
        properties: {
          role: {
            type: 'string',
            enum: ['admin', 'edit', 'view'],
            description: 'The Kubeflow role: admin, edit or view.',
          },
        },
      },
    },
  };
}

/** `spec.scope` of a UserRole or GroupRole: a Scope in the same namespace, its controller owner. */
export function roleScopeSchema(kind: string): JSONSchemaProps {
  const name = objectNameSchema('spec.scope', '');
  return {
    ...name,
    description:
      'The Scope (same namespace) the permissions are granted in; it becomes the controller owner of this ' +
      `${kind}. Immutable: delete and recreate the ${kind} to grant elsewhere.`,
    'x-kubernetes-validations': [
      ...(name['x-kubernetes-validations'] ?? []),
      immutableRule('spec.scope', kind),
    ],
  };
}

/** `spec.permissions` of a UserRole or GroupRole: Permission names, at least one, each once. */
export function rolePermissionsSchema(): JSONSchemaProps {
  return {
    ...objectNamesSchema(
      'spec.permissions',
      'The Permissions (same namespace) granted, each at most once; their level must be the level of the Scope.',
      'The name of a Permission in the same namespace.',
    ),
    'x-kubernetes-validations': [
      { rule: 'size(self) > 0', message: 'spec.permissions must name at least one Permission' },
    ],
  };
}

/** The printer columns of UserRole and GroupRole; `subject` is `user` or `group`. */
export function roleColumns(subject: 'user' | 'group'): PrinterColumn[] {
  return [
    readyColumn(),
    { name: subject === 'user' ? 'User' : 'Group', type: 'string', jsonPath: `.spec.${subject}` },
    { name: 'Scope', type: 'string', jsonPath: '.spec.scope' },
    { name: 'Permissions', type: 'string', jsonPath: '.spec.permissions', priority: 1 },
    messageColumn(),
    ageColumn(),
  ];
}

/** Every PluginApplyStatus and what it means: a Record, so the compiler insists on each one. */
const PLUGIN_APPLY_STATUS_MEANINGS: Readonly<Record<PluginApplyStatus, string>> = {
  Applied: 'done',
  Failed: 'see message',
  Pending: 'in progress',
  Undefined: 'not yet computed',
  Deleting: 'being removed',
  Skipped: 'the cluster is paused',
};

/** One PluginObject: where a plugin stands for one permission in one cluster. */
export function pluginObjectSchema(): JSONSchemaProps {
  return {
    type: 'object',
    description: 'Where one plugin stands for one permission in one cluster, and what it wrote.',
    required: ['status'],
    properties: {
      status: {
        type: 'string',
        enum: Object.keys(PLUGIN_APPLY_STATUS_MEANINGS),
        description: `PluginApplyStatus. ${Object.entries(PLUGIN_APPLY_STATUS_MEANINGS)
          .map(([status, meaning]) => `${status}: ${meaning}`)
          .join('; ')}.`,
      },
      message: { type: 'string', maxLength: 32768, description: 'Why, for humans; may be empty.' },
      objects: {
        type: 'array',
        description: 'The objects the plugin wrote for it.',
        items: {
          type: 'object',
          required: ['apiVersion', 'kind', 'name'],
          properties: {
            apiVersion: { type: 'string', maxLength: 317 },
            kind: { type: 'string', maxLength: 63 },
            namespace: { type: 'string', maxLength: 63 },
            name: { type: 'string', maxLength: 253 },
          },
        },
      },
    },
  };
}

/** RoleStatus, the status of UserRole and GroupRole. */
export function roleStatusSchema(): JSONSchemaProps {
  return {
    type: 'object',
    description: 'RoleStatus: whether every plugin applied every permission, and where each stands.',
    properties: {
      ready: {
        type: 'boolean',
        description: 'True when every plugin applied every permission in every target cluster.',
      },
      message: { type: 'string', maxLength: 32768, description: 'Why not ready, for humans.' },
      permissions: {
        type: 'object',
        description: 'Permission name, then cluster id or platform, then plugin name: a PluginObject.',
        additionalProperties: {
          type: 'object',
          description: `Cluster id (namespace/name), or ${PLATFORM} for the management cluster: the plugins there.`,
          additionalProperties: {
            type: 'object',
            description: 'Plugin name (rbac, argocd, kubeflow, tenant): its PluginObject.',
            additionalProperties: pluginObjectSchema(),
          },
        },
      },
      observedGeneration: observedGenerationSchema(),
    },
  };
}

/** `status.conditions` (metav1.Condition, a list keyed by type). */
export function conditionsSchema(description: string, types: string): JSONSchemaProps {
  return kitConditionsSchema(description, types);
}

/**
 * The whole object's schema: apiVersion, kind, metadata, a required spec, a status, and
 * the rules that need `metadata.name` (CEL sees only name and generateName of metadata,
 * and only from the root). metadata stays `{type: object}`: the apiserver validates names.
 */
export function objectSchema(
  description: string,
  spec: JSONSchemaProps,
  status: JSONSchemaProps,
  rootRules: readonly ValidationRule[] = [],
): JSONSchemaProps {
  return {
    type: 'object',
    description,
    required: ['spec'],
    properties: {
      apiVersion: { type: 'string', description: `${API_VERSION}.` },
      kind: { type: 'string', description: 'The kind.' },
      metadata: { type: 'object' },
      spec,
      status,
    },
    ...(rootRules.length > 0 ? { 'x-kubernetes-validations': rootRules } : {}),
  };
}

/** The printer column of a boolean `status.ready`. */
export function readyColumn(): PrinterColumn {
  return { name: 'Ready', type: 'boolean', jsonPath: '.status.ready' };
}

/** The printer column of a condition's status. */
export function conditionColumn(type: string, name = type): PrinterColumn {
  return { name, type: 'string', jsonPath: `.status.conditions[?(@.type=="${type}")].status` };
}

export function levelColumn(): PrinterColumn {
  return { name: 'Level', type: 'string', jsonPath: '.spec.level' };
}

export function messageColumn(): PrinterColumn {
  return { name: 'Message', type: 'string', jsonPath: '.status.message', priority: 1 };
}

export function ageColumn(): PrinterColumn {
  return { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };
}
