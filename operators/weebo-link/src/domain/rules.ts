/**
 * Link rules: the `links:` list of the chart's values, rendered as is into the ConfigMap
 * `weebo-link-rules`. Parsing is pure and total: each rule is compiled on its own, and
 * an invalid rule comes back as a {@link RuleError} listing every problem found, so the
 * caller refuses that rule alone while the others keep running.
 *
 * What is checked here, offline: the structure, every CEL leaf compiled and type-checked
 * (mapping leaves over `source`, `safe` over `target`), mapping leaves free of loops (RFC
 * 0002 D4), a target name that reads only source fields that never change, `immutable`
 * paths present in the mapping. What needs a cluster (apiVersion and kind resolved by
 * discovery) is checked by the rules controller on top of this (`checkDiscovery` in
 * `controllers/rules.ts`, which check-rules also runs when given a cluster).
 */
import {
  CelEnvironment,
  type CelProgram,
  formatCelError,
  type JsonValue,
  outlineExpression,
} from '@operators/cel';
import { parse as parseYaml } from 'yaml';
import { RESERVED_HEADERS } from './headers.ts';

/** A mapping tree: literals, CEL leaves, and objects or lists of them. */
export type MappingNode =
  | { readonly kind: 'literal'; readonly value: JsonValue }
  | { readonly kind: 'cel'; readonly expression: string; readonly program: CelProgram; readonly path: string }
  | { readonly kind: 'object'; readonly fields: Readonly<Record<string, MappingNode>> }
  | { readonly kind: 'list'; readonly items: readonly MappingNode[] };

export interface KindRef {
  readonly apiVersion: string;
  readonly kind: string;
  /** The plural resource name (RBAC and policies need it); from `resource:` or derived from the kind. */
  readonly resource: string;
}

export const Then = { Keep: 'Keep', Delete: 'Delete' } as const;
export type Then = (typeof Then)[keyof typeof Then];

/** A rule, compiled and ready to evaluate. */
export interface Rule {
  readonly name: string;
  readonly header: string;
  readonly source: KindRef & { readonly namespaces: readonly string[] };
  readonly target: KindRef & {
    readonly namespace: string;
    /** Evaluated over `source`; must give a string. */
    readonly name: MappingNode;
    /** The mapped `spec`, an object node. */
    readonly spec: MappingNode;
    /** Dotted paths from the target's root (`spec.name`) that a re-apply may never change. */
    readonly immutable: readonly string[];
  };
  readonly onRemoval: {
    /** Literal fields applied to the target when its source leaves (its safe state). */
    readonly patch: Readonly<Record<string, JsonValue>>;
    /** Evaluated over `target`; an error is never true. */
    readonly safe: MappingNode;
    readonly then: Then;
  };
  /** The rule as written, to compare two loads (a changed rule restarts its controller). */
  readonly raw: JsonValue;
}

/** A rule refused at load, with every problem found. */
export interface RuleError {
  /** The rule's name, or `links[i]` when it has none. */
  readonly link: string;
  readonly problems: readonly string[];
}

export interface CompiledRules {
  readonly rules: readonly Rule[];
  readonly errors: readonly RuleError[];
}

const sourceEnv = new CelEnvironment({ variables: { source: 'dyn' } });
const targetEnv = new CelEnvironment({ variables: { target: 'dyn' } });

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/**
 * `source.namespaces: ["*"]`: sources are read in every namespace, which makes that read
 * (and the Events on those sources) cluster-wide in the RBAC: only when a rule says so.
 */
export const ALL_NAMESPACES = '*';
const HEADER_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const API_VERSION = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?v[0-9]+((alpha|beta)[0-9]+)?$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;

/**
 * Reads the document that holds the rules: a values file or the ConfigMap's `links.yaml`,
 * both a YAML map with a `links:` list. Errors say what is wrong and where.
 */
export function parseRulesDocument(
  text: string,
):
  | { readonly ok: true; readonly links: readonly unknown[] }
  | { readonly ok: false; readonly message: string } {
  let doc: unknown;
  try {
    doc = parseYaml(text, { intAsBigInt: false });
  } catch (err) {
    return { ok: false, message: `malformed YAML: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (doc === null || doc === undefined) return { ok: true, links: [] };
  if (!isRecord(doc)) return { ok: false, message: 'the rules document must be a map with a `links:` list' };
  const links = doc.links ?? [];
  if (!Array.isArray(links)) return { ok: false, message: '`links` must be a list of rules' };
  return { ok: true, links };
}

/** Compiles every rule; a duplicate name refuses the later rule. */
export function compileRules(links: readonly unknown[]): CompiledRules {
  const rules: Rule[] = [];
  const errors: RuleError[] = [];
  const names = new Set<string>();
  links.forEach((raw, i) => {
    const r = compileRule(raw, i);
    if (!r.ok) {
      errors.push(r.error);
      return;
    }
    if (names.has(r.rule.name)) {
      errors.push({ link: r.rule.name, problems: [`links[${i}]: another rule is named ${r.rule.name}`] });
      return;
    }
    names.add(r.rule.name);
    rules.push(r.rule);
  });
  return { rules, errors };
}

/** Parses and compiles a whole document: the document's own error refuses every rule. */
export function loadRules(text: string): CompiledRules & { readonly documentError?: string } {
  const doc = parseRulesDocument(text);
  if (!doc.ok) return { rules: [], errors: [], documentError: doc.message };
  return compileRules(doc.links);
}

export function compileRule(
  raw: unknown,
  index: number,
): { readonly ok: true; readonly rule: Rule } | { readonly ok: false; readonly error: RuleError } {
  const problems: string[] = [];
  const at = `links[${index}]`;
  if (!isRecord(raw)) {
    return { ok: false, error: { link: at, problems: [`${at} must be a map`] } };
  }
  const name = typeof raw.name === 'string' ? raw.name : '';
  const link = name || at;
  const p = (m: string): void => {
    problems.push(m);
  };
  if (!name) p('name is required');
  else if (!DNS_LABEL.test(name) || name.length > 63)
    p(
      `name ${JSON.stringify(name)} must be a DNS label (lower case, digits, '-', at most 63): it is a label value`,
    );

  const header = typeof raw.header === 'string' ? raw.header : '';
  if (!header) p('header is required');
  else if (!HEADER_NAME.test(header) || header.length > 63)
    p(`header ${JSON.stringify(header)} must be lower case letters, digits, '-' or '.', at most 63`);
  else if (RESERVED_HEADERS.has(header))
    p(`header ${JSON.stringify(header)} is reserved: link.weebo.io/${header} is a target header`);

  const source = isRecord(raw.source) ? raw.source : undefined;
  if (!source) p('source is required');
  const sourceKind = kindRef(source, 'source', p);
  const namespaces = source && Array.isArray(source.namespaces) ? source.namespaces : undefined;
  if (
    source &&
    (!namespaces ||
      namespaces.length === 0 ||
      !namespaces.every((n) => typeof n === 'string' && DNS_LABEL.test(n))) &&
    !(namespaces?.length === 1 && namespaces[0] === ALL_NAMESPACES)
  )
    p(
      namespaces?.includes(ALL_NAMESPACES)
        ? `source.namespaces: "${ALL_NAMESPACES}" (every namespace) stands alone`
        : `source.namespaces must be a non-empty list of namespace names, or ["${ALL_NAMESPACES}"] for every namespace`,
    );

  const target = isRecord(raw.target) ? raw.target : undefined;
  if (!target) p('target is required');
  const targetKind = kindRef(target, 'target', p);
  const namespace = target && typeof target.namespace === 'string' ? target.namespace : '';
  if (target && !DNS_LABEL.test(namespace)) p('target.namespace must be a namespace name');
  const nameNode = target
    ? compileNode(target.name, 'target.name', sourceEnv, p, (path, expr) => {
        mappingLeafProblems(path, expr).forEach(p);
        nameLeafProblems(expr).forEach(p);
      })
    : undefined;
  if (target && target.name === undefined) p('target.name is required (a literal or {cel: ...} over source)');
  if (nameNode?.kind === 'literal' && typeof nameNode.value !== 'string') p('target.name must be a string');
  if (nameNode && nameNode.kind !== 'literal' && nameNode.kind !== 'cel')
    p('target.name must be a single leaf');
  if (target && !isRecord(target.spec)) p('target.spec must be a map (the mapped fields)');
  const specNode =
    target && isRecord(target.spec)
      ? compileNode(target.spec, 'target.spec', sourceEnv, p, (path, expr) =>
          mappingLeafProblems(path, expr).forEach(p),
        )
      : undefined;
  const immutable = target?.immutable ?? [];
  if (!Array.isArray(immutable) || !immutable.every((x) => typeof x === 'string'))
    p('target.immutable must be a list of field paths such as spec.name');
  const immutablePaths = Array.isArray(immutable)
    ? immutable.filter((x): x is string => typeof x === 'string')
    : [];
  for (const path of immutablePaths) {
    if (!specNode || !path.startsWith('spec.') || !nodeAt(specNode, path.slice(5).split('.')))
      p(`target.immutable: ${path} is not a field of the mapping (only mapped spec fields can be immutable)`);
  }

  const onRemoval = isRecord(raw.onRemoval) ? raw.onRemoval : undefined;
  if (!onRemoval) p('onRemoval is required: the safe state of the target (patch, safe, then)');
  const patch = onRemoval?.patch ?? {};
  if (!isRecord(patch)) p('onRemoval.patch must be a map');
  else {
    for (const k of Object.keys(patch)) if (k !== 'spec') p(`onRemoval.patch may only set spec, not ${k}`);
    if (containsCel(patch))
      p('onRemoval.patch is literal: {cel: ...} is not allowed there (the source is gone)');
  }
  const safeNode = onRemoval ? compileNode(onRemoval.safe, 'onRemoval.safe', targetEnv, p) : undefined;
  if (onRemoval && onRemoval.safe === undefined)
    p('onRemoval.safe is required (true, or {cel: ...} over target)');
  if (safeNode && safeNode.kind === 'literal' && typeof safeNode.value !== 'boolean')
    p('onRemoval.safe must be a bool');
  if (safeNode && safeNode.kind === 'cel' && !['bool', 'dyn'].includes(safeNode.program.outputType))
    p(`onRemoval.safe must be a bool expression, not ${safeNode.program.outputType}`);
  if (safeNode && safeNode.kind !== 'literal' && safeNode.kind !== 'cel')
    p('onRemoval.safe must be a single leaf');
  const then = onRemoval?.then ?? Then.Keep;
  if (then !== Then.Keep && then !== Then.Delete)
    p(`onRemoval.then must be Keep or Delete, not ${JSON.stringify(then)}`);

  if (
    problems.length > 0 ||
    !sourceKind ||
    !targetKind ||
    !nameNode ||
    !specNode ||
    !safeNode ||
    !isRecord(patch)
  ) {
    return { ok: false, error: { link, problems } };
  }
  return {
    ok: true,
    rule: {
      name,
      header,
      source: { ...sourceKind, namespaces: (namespaces ?? []) as string[] },
      target: { ...targetKind, namespace, name: nameNode, spec: specNode, immutable: immutablePaths },
      // biome-ignore lint/suspicious/noThenProperty: `then` is RFC 0002's field name (Keep | Delete); this object is never awaited.
      onRemoval: { patch: patch as Record<string, JsonValue>, safe: safeNode, then: then as Then },
      raw: raw as JsonValue,
    },
  };
}

function kindRef(
  o: Record<string, unknown> | undefined,
  where: string,
  p: (m: string) => void,
): KindRef | undefined {
  if (!o) return undefined;
  const { apiVersion, kind, resource } = o;
  let ok = true;
  if (typeof apiVersion !== 'string' || !API_VERSION.test(apiVersion)) {
    p(`${where}.apiVersion must be group/version, such as stalwart.weebo.io/v1alpha1`);
    ok = false;
  }
  if (typeof kind !== 'string' || !KIND.test(kind)) {
    p(`${where}.kind must be a Kind, such as StalwartAccount`);
    ok = false;
  }
  if (resource !== undefined && (typeof resource !== 'string' || !DNS_LABEL.test(resource))) {
    p(`${where}.resource must be the plural resource name, such as stalwartaccounts`);
    ok = false;
  }
  if (!ok) return undefined;
  return {
    apiVersion: apiVersion as string,
    kind: kind as string,
    resource: (resource as string | undefined) ?? pluralOf(kind as string),
  };
}

/**
 * The plural Kubernetes derives for a CRD kind by default (`StalwartAccount` →
 * `stalwartaccounts`, `Policy` → `policies`). A CRD may choose another plural: the rule
 * then says `resource:`, and the loader checks it against discovery.
 */
export function pluralOf(kind: string): string {
  const k = kind.toLowerCase();
  if (/(s|x|z|ch|sh)$/.test(k)) return `${k}es`;
  if (/[^aeiou]y$/.test(k)) return `${k.slice(0, -1)}ies`;
  return `${k}s`;
}

/**
 * Compiles a tree of literals and `{cel: ...}` leaves; `leaf`, when given, checks each
 * compiled CEL leaf further (the mapping's RFC 0002 D4, see {@link mappingLeafProblems}).
 */
function compileNode(
  value: unknown,
  path: string,
  env: CelEnvironment,
  p: (m: string) => void,
  leaf?: (path: string, expression: string) => void,
): MappingNode | undefined {
  if (isRecord(value)) {
    const keys = Object.keys(value);
    if (keys.includes('cel')) {
      if (keys.length !== 1 || typeof value.cel !== 'string') {
        p(`${path}: a CEL leaf is exactly {cel: "<expression>"}`);
        return undefined;
      }
      const compiled = env.compile(value.cel);
      if (!compiled.ok) {
        p(`${path}: ${formatCelError(compiled.error)}`);
        return undefined;
      }
      leaf?.(path, value.cel);
      return { kind: 'cel', expression: value.cel, program: compiled.value, path };
    }
    const fields: Record<string, MappingNode> = {};
    for (const [k, v] of Object.entries(value)) {
      const n = compileNode(v, `${path}.${k}`, env, p, leaf);
      if (n) fields[k] = n;
    }
    return { kind: 'object', fields };
  }
  if (Array.isArray(value)) {
    const items: MappingNode[] = [];
    value.forEach((v, i) => {
      const n = compileNode(v, `${path}[${i}]`, env, p, leaf);
      if (n) items.push(n);
    });
    return { kind: 'list', items };
  }
  if (value === undefined) return undefined;
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value))
    return { kind: 'literal', value: value as JsonValue };
  p(`${path}: unsupported value`);
  return undefined;
}

/**
 * RFC 0002 D4, "a mapping in CEL, limited to reading and the ternary": a mapping leaf reads
 * fields and chooses with operators and the ternary; it never loops. Refused: every macro
 * that iterates or binds a variable (`all`, `exists`, `exists_one`, `map`, `filter`, their
 * two-variable forms, `sortBy`, `optMap`, `optFlatMap`: see `outlineExpression`). Allowed:
 * `has()`, a presence test on one field (the RFC's way to read an optional field without
 * an evaluation error), and function calls (string functions and the like), which do not
 * loop over the source. `onRemoval.safe` is not a mapping and keeps every macro: the RFC's
 * own `safe` tests its conditions with `exists()`.
 *
 * Read from the parsed expression, never its text: a field named `map` or a string
 * `"exists("` is no loop.
 */
function mappingLeafProblems(path: string, expression: string): string[] {
  const outline = outlineExpression(expression);
  // The leaf compiled, so it parses; an outline that fails anyway refuses rather than allows.
  if (!outline.ok) return [`${path}: ${formatCelError(outline.error)}`];
  return outline.value.comprehensions.map(
    (m) =>
      `${path}: ${m.macro}() at ${m.position.line}:${m.position.column} loops over a collection: refused by RFC 0002 D4, a mapping reads fields and chooses with operators and the ternary, it does not loop`,
  );
}

/**
 * The fields of a Kubernetes object that no update can change: the name and namespace
 * (the object's key), the UID, and its kind and apiVersion (a request for another one is
 * a request for another object). Everything else, labels, annotations, `generateName` and
 * the spec included, can change under the same object.
 */
const IMMUTABLE_SOURCE_FIELDS: readonly string[] = [
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
  'kind',
  'apiVersion',
];

/**
 * The target's name is immutable by construction (RFC 0002: a change is a Conflict, never
 * a rename): a name leaf may read only {@link IMMUTABLE_SOURCE_FIELDS} of the source, down
 * their full path. A read of the whole source, a dynamic index (`source["spec"]`) or a
 * `has()` of a mutable field is refused like a read of that field: its value could change.
 */
function nameLeafProblems(expression: string): string[] {
  const outline = outlineExpression(expression);
  if (!outline.ok) return [`target.name: ${formatCelError(outline.error)}`];
  const mutable = new Set<string>();
  for (const r of outline.value.reads) {
    if (r.variable !== 'source') continue;
    const field = r.path.join('.');
    if (!IMMUTABLE_SOURCE_FIELDS.includes(field)) mutable.add(['source', ...r.path].join('.'));
  }
  const allowed = IMMUTABLE_SOURCE_FIELDS.map((f) => `source.${f}`);
  return [...mutable].map(
    (read) =>
      `target.name: reads ${read}, which can change: the target would have to be renamed, and weebo-link never renames one. The name may read only ${allowed.slice(0, -1).join(', ')} and ${allowed.at(-1)}`,
  );
}

/** The node at a field path inside an object node, if the mapping states it. */
export function nodeAt(node: MappingNode, path: readonly string[]): MappingNode | undefined {
  let n: MappingNode | undefined = node;
  for (const seg of path) {
    if (n?.kind !== 'object') return undefined;
    n = n.fields[seg];
  }
  return n;
}

function containsCel(v: unknown): boolean {
  if (isRecord(v)) return 'cel' in v || Object.values(v).some(containsCel);
  if (Array.isArray(v)) return v.some(containsCel);
  return false;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
