/**
 * The leaves of a YAML document in the order sops visits them: mapping entries in
 * document order, sequence items in order (sharing their parent's path), nulls
 * skipped. sops hashes the leaves into the MAC in this order, so the walk runs over
 * the YAML nodes themselves, never over a JavaScript object, whose key order differs
 * for integer-like keys ("10" before "9", "1" before "b").
 */
import { isAlias, isMap, isScalar, isSeq, type Scalar, type YAMLMap } from 'yaml';
import { SopsError, SopsErrorKind } from './errors.ts';
import type { LeafValue } from './leaf.ts';

/** The YAML merge key, which go-yaml writes tagged `!!merge` when it is a value. */
const MERGE_KEY = '<<';

export interface Leaf {
  /** The node, so that a walk can replace its value in place. */
  readonly scalar: Scalar;
  /** The keys from the root to the value. */
  readonly path: readonly string[];
  readonly value: LeafValue;
}

/** All non-null scalars under `root`, in sops' order. */
export function collectLeaves(root: YAMLMap): Leaf[] {
  const out: Leaf[] = [];
  walk(root, [], out);
  return out;
}

/** A path for messages: `data.password`. */
export function showPath(path: readonly string[]): string {
  return path.length === 0 ? '(root)' : path.join('.');
}

function walk(node: unknown, path: string[], out: Leaf[]): void {
  if (node === null || node === undefined) return;
  if (isAlias(node)) {
    throw new SopsError(
      SopsErrorKind.Unsupported,
      `${showPath(path)}: YAML aliases are not supported in SOPS files here; expand the anchor`,
    );
  }
  if (isMap(node)) {
    for (const pair of node.items) {
      if (isScalar(pair.key)) normalizeMergeKey(pair.key);
      const key = isScalar(pair.key) ? pair.key.value : pair.key;
      if (typeof key !== 'string') {
        // sops refuses non-string keys too (a plain `1:` or `true:` is not a string in YAML).
        throw new SopsError(
          SopsErrorKind.Malformed,
          `${showPath(path)}: a mapping key is not a string (${String(key)}); only string keys are supported`,
        );
      }
      walk(pair.value, [...path, key], out);
    }
    return;
  }
  if (isSeq(node)) {
    for (const item of node.items) walk(item, path, out);
    return;
  }
  if (isScalar(node)) {
    normalizeMergeKey(node);
    const v = node.value;
    if (v === null || v === undefined) return;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') {
      out.push({ scalar: node, path, value: v });
      return;
    }
    throw new SopsError(
      SopsErrorKind.Unsupported,
      `${showPath(path)}: a scalar of type ${typeof v} is not supported`,
    );
  }
  throw new SopsError(SopsErrorKind.Malformed, `${showPath(path)}: unexpected YAML node`);
}

/**
 * go-yaml writes a "<<" string as `!!merge <<` and reads it back as the string; the
 * yaml package reads a symbol. The node becomes the string, for later readers too.
 */
function normalizeMergeKey(node: Scalar): void {
  if (typeof node.value === 'symbol' && node.value.description === MERGE_KEY) node.value = MERGE_KEY;
}
