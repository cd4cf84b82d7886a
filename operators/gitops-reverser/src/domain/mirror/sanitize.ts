/**
 * What of a live object goes into Git, and as which bytes. The file holds what a person
 * would apply: the cluster's bookkeeping (status, resourceVersion, uid, managedFields …)
 * changes on every write and would turn each status update into a commit, and the
 * cluster-assigned values (a Service's IP, owner UIDs) would be wrong in any other cluster.
 * The bytes are deterministic, so that an object that did not change in substance gives
 * the same file and no commit.
 */
import { Document, Pair, Scalar, type Tags, visit, YAMLMap } from 'yaml';

/**
 * metadata fields the apiserver sets and a person never writes: they identify this copy in
 * this cluster (uid, resourceVersion, creationTimestamp, selfLink), count its writes
 * (generation, managedFields), describe a deletion in progress, or point at owners by UID,
 * which would dangle (and get the object garbage-collected) anywhere else.
 */
export const SERVER_METADATA_FIELDS: readonly string[] = [
  'managedFields',
  'resourceVersion',
  'uid',
  'generation',
  'creationTimestamp',
  'selfLink',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'ownerReferences',
];

/** kubectl's copy of the last applied object: a second, stale copy of the file's own content. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * A Service's clusterIP that is chosen by the user rather than allocated: `None` makes the
 * Service headless, and dropping it would turn a headless Service into a normal one when
 * the file is applied.
 */
export const HEADLESS_CLUSTER_IP = 'None';

/** The keys written first, in this order, at the top of every file. */
export const TOP_LEVEL_KEY_ORDER: readonly string[] = ['apiVersion', 'kind', 'metadata'];

/** The metadata keys written first, in this order. */
export const METADATA_KEY_ORDER: readonly string[] = ['name', 'namespace', 'labels', 'annotations'];

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The object as it goes into Git: a new object without status and the server-set fields
 * above, without the last-applied annotation (and without `annotations` when that leaves
 * it empty), and, for a core Service, without the allocated `spec.clusterIP` and
 * `spec.clusterIPs` (kept when they say `None`: headless is the user's choice). Never
 * changes `obj`.
 */
export function sanitize(obj: Record<string, unknown>): Record<string, unknown> {
  const out = structuredClone(obj);
  delete out.status;
  const metadata = out.metadata;
  if (isObject(metadata)) {
    for (const field of SERVER_METADATA_FIELDS) delete metadata[field];
    const annotations = metadata.annotations;
    if (isObject(annotations)) {
      delete annotations[LAST_APPLIED_ANNOTATION];
      if (Object.keys(annotations).length === 0) delete metadata.annotations;
    }
  }
  if (out.apiVersion === 'v1' && out.kind === 'Service' && isObject(out.spec)) {
    const spec = out.spec;
    if (spec.clusterIP !== HEADLESS_CLUSTER_IP) delete spec.clusterIP;
    const ips = spec.clusterIPs;
    if (!(Array.isArray(ips) && ips.length > 0 && ips.every((ip) => ip === HEADLESS_CLUSTER_IP))) {
      delete spec.clusterIPs;
    }
  }
  return out;
}

/**
 * Plain strings that a YAML 1.2 (core schema) reader takes for something else and that the
 * YAML 1.1 schema used for writing does not already quote (it quotes `yes`, `on`, `0755`,
 * `1_000`, `12:30` … for YAML 1.1 readers such as kubectl's). Quoting both sets keeps a
 * ConfigMap value `0o17` or `on` a string for every reader, kubectl's and kustomize's alike.
 */
const CORE_SCHEMA_NON_STRINGS: readonly RegExp[] = [
  /^(?:~|null|Null|NULL)?$/,
  /^(?:true|True|TRUE|false|False|FALSE)$/,
  /^[-+]?[0-9]+$/,
  /^0o[0-7]+$/,
  /^0x[0-9a-fA-F]+$/,
  /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/,
  /^[-+]?\.(?:inf|Inf|INF)$/,
  /^\.(?:nan|NaN|NAN)$/,
];

/** Repeated values are written out in full: an anchor and alias would surprise a reader. */
const CREATE_OPTIONS = { aliasDuplicateObjects: false } as const;

/**
 * The YAML 1.1 merge key: as a plain key it would merge a map instead of naming a field.
 * Written quoted, as any other string.
 */
const MERGE_KEY = '<<';

/** The tag the YAML 1.1 schema gives a plain `<<`. */
const MERGE_TAG = 'tag:yaml.org,2002:merge';

/**
 * The YAML 1.1 tags less the merge key, which would write a `<<` key plain (as a merge)
 * whatever the quoting asked for. An object file's `<<` is always an ordinary key.
 */
const withoutMergeKey = (tags: Tags): Tags =>
  tags.filter((t) => (typeof t === 'string' ? t !== 'merge' : t.tag !== MERGE_TAG));

/**
 * Characters the yaml package writes as they are, but that a YAML 1.1 reader (go-yaml,
 * behind kubectl) rejects or reads as a line break: DEL, the C1 controls (NEL among them),
 * the Unicode line and paragraph separators, the byte order mark (dropped or refused), and
 * the noncharacters U+FFFE and U+FFFF. A string with one is written double-quoted, with
 * the character as an escape sequence.
 */
const UNSAFE_CHARACTER = /[\u007f-\u009f\u2028\u2029\ufeff\ufffe\uffff]/;
const UNSAFE_CHARACTERS = new RegExp(UNSAFE_CHARACTER.source, 'g');

/** The YAML escape sequence of an unsafe character (YAML's own names for NEL, LS and PS). */
function escapeUnsafe(ch: string): string {
  if (ch === '\u0085') return '\\N';
  if (ch === '\u2028') return '\\L';
  if (ch === '\u2029') return '\\P';
  const code = ch.codePointAt(0) ?? 0;
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * Multi-line strings that go-yaml reads differently from what the yaml package meant when
 * written as a block scalar: blanks and line breaks only (go-yaml drops the blanks), or a
 * tab at the start of the first line that is not empty (go-yaml takes it for indentation
 * and refuses it). They are double-quoted instead; other blank lines, as in an indented
 * script, keep the block style.
 */
const BLANKS_ONLY = /^[ \t\r\n]*$/;
const LEADING_TAB = /^\n*\t/;

/** Whether a string must be double-quoted to read back as itself in YAML 1.1 and 1.2 readers. */
const mustQuote = (s: string): boolean =>
  s === MERGE_KEY ||
  CORE_SCHEMA_NON_STRINGS.some((re) => re.test(s)) ||
  UNSAFE_CHARACTER.test(s) ||
  (s.includes('\n') && (BLANKS_ONLY.test(s) || LEADING_TAB.test(s)));

/**
 * Double-quoted strings stay on one line (`\n` escapes), however long: the yaml package
 * would otherwise break long ones over lines, which is harder to read in a diff.
 */
const ONE_LINE_DOUBLE_QUOTED = Number.MAX_SAFE_INTEGER;

/** `obj`'s keys with those in `order` first, then the rest as given. */
function orderedKeys(obj: Json, order: readonly string[]): string[] {
  const first = order.filter((key) => Object.hasOwn(obj, key));
  return [...first, ...Object.keys(obj).filter((key) => !first.includes(key))];
}

/**
 * A YAML mapping of `obj` with the keys in `order` first. Built pair by pair, because a
 * JavaScript Map would be written as an `!!omap` under the YAML 1.1 schema, and a new
 * object would turn a key such as `__proto__` into a prototype.
 */
function orderedMap(
  doc: Document,
  obj: Json,
  order: readonly string[],
  inner?: (key: string) => YAMLMap | undefined,
): YAMLMap {
  const map = new YAMLMap();
  for (const key of orderedKeys(obj, order)) {
    map.add(new Pair(doc.createNode(key), inner?.(key) ?? doc.createNode(obj[key], CREATE_OPTIONS)));
  }
  return map;
}

/**
 * Deterministic YAML for one object: `apiVersion`, `kind`, `metadata` first and the rest
 * in the order given (the apiserver's order, which is stable); in metadata `name`,
 * `namespace`, `labels`, `annotations` first. Long strings are never folded (lineWidth 0),
 * repeated values are written out rather than as anchors, sequences are not indented under
 * their key (as `kubectl get -o yaml` writes them), and strings that a YAML 1.1 or 1.2
 * reader would take for a boolean, number or null, or read differently, are double-quoted.
 * The same object always gives the same bytes.
 */
export function toYaml(doc: Record<string, unknown>): string {
  const yamlDoc = new Document(null, { version: '1.1', customTags: withoutMergeKey });
  const metadata = doc.metadata;
  yamlDoc.contents = orderedMap(yamlDoc, doc, TOP_LEVEL_KEY_ORDER, (key) =>
    key === 'metadata' && isObject(metadata) ? orderedMap(yamlDoc, metadata, METADATA_KEY_ORDER) : undefined,
  );
  visit(yamlDoc, {
    Scalar(_key, node) {
      if (typeof node.value === 'string' && mustQuote(node.value)) node.type = Scalar.QUOTE_DOUBLE;
    },
  });
  // Unsafe characters occur only inside double-quoted strings (mustQuote saw to that), so
  // escaping them all over the text changes no structure.
  return yamlDoc
    .toString({ lineWidth: 0, indentSeq: false, doubleQuotedMinMultiLineLength: ONE_LINE_DOUBLE_QUOTED })
    .replace(UNSAFE_CHARACTERS, escapeUnsafe);
}
