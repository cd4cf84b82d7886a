/**
 * Fields a later API replaced. They stay in the schemas so an object written before the
 * change can still be read, and a CEL rule refuses writing them; an object that already
 * STORES one is refused here, by the reconcilers, rather than having its old meaning
 * honoured silently or its field dropped without the owner knowing.
 */
import { type Decision, denied } from './decision.ts';
import { ReasonSupersededFieldStored } from './reasons.ts';

/** One superseded field: where it was, and what replaced it. */
interface Superseded {
  readonly field: string;
  readonly replacement: string;
  /** Whether the stored value counts; by default any stored value does, `{}` and `[]` included. */
  readonly counts?: (value: unknown) => boolean;
}

const SUPERSEDED = {
  ClusterProvider: [
    { field: 'spec.allowedNamespaces', replacement: 'spec.accessFrom (names or selector)' },
    {
      field: 'spec.allowSourceNamespaceOverride',
      replacement: 'spec.allowAnySourceNamespace',
      // `false` was the old default, written by defaulting rather than by an owner, and
      // means what the absence of the replacement means: refusing it would break every
      // provider an older version stored.
      counts: (v) => v !== false,
    },
  ],
  GitProvider: [
    { field: 'spec.push', replacement: "the GitTarget's spec.commit.window" },
    { field: 'spec.commit.message', replacement: "the GitTarget's spec.commit.message" },
  ],
  GitTarget: [
    {
      field: 'spec.allowedSourceNamespaces',
      replacement:
        "the ClusterProvider's spec.allowAnySourceNamespace and each WatchRule item's sourceNamespace (the source credential's RBAC bounds what is read)",
    },
  ],
} as const satisfies Record<string, readonly Superseded[]>;

export type SupersedingKind = keyof typeof SUPERSEDED;

/** The value at `path` (`spec.a.b`) of an object whose root is `spec`. */
function valueAt(spec: unknown, path: string): unknown {
  let v: unknown = spec;
  for (const part of path.split('.').slice(1)) {
    if (v === null || typeof v !== 'object') return undefined;
    v = Object.hasOwn(v, part) ? (v as Record<string, unknown>)[part] : undefined;
  }
  return v;
}

/** The superseded fields `spec` stores, in declaration order (e.g. `spec.push`). */
export function storedSupersededFields(kind: SupersedingKind, spec: unknown): string[] {
  const entries: readonly Superseded[] = SUPERSEDED[kind];
  return entries
    .filter((s) => {
      const v = valueAt(spec, s.field);
      return v !== undefined && v !== null && (s.counts ? s.counts(v) : true);
    })
    .map((s) => s.field);
}

/**
 * The refusal for an object of `kind` named `name` whose spec stores a superseded field,
 * or undefined when it stores none. The message names every stored field and its
 * replacement, so one edit fixes the object.
 */
export function supersededFieldRefusal(
  kind: SupersedingKind,
  name: string,
  spec: unknown,
): Decision | undefined {
  const stored = storedSupersededFields(kind, spec);
  if (stored.length === 0) return undefined;
  const entries: readonly Superseded[] = SUPERSEDED[kind];
  const parts = stored.map((f) => `${f} (replaced by ${entries.find((s) => s.field === f)?.replacement})`);
  return denied(
    ReasonSupersededFieldStored,
    `${kind} "${name}" stores ${parts.join(' and ')}; remove ${stored.length > 1 ? 'them' : 'it'} to resume mirroring`,
  );
}
