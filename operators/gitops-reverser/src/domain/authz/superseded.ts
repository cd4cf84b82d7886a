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
    { field: 'spec.allowedNamespaces', replacement: 'spec.accessFrom' },
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
    { field: 'spec.push', replacement: 'GitTarget.spec.commit.window' },
    { field: 'spec.commit.message', replacement: 'GitTarget.spec.commit.message' },
  ],
  GitTarget: [
    {
      field: 'spec.allowedSourceNamespaces',
      replacement: 'ClusterProvider.spec.allowAnySourceNamespace',
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

/** The object a refusal names: `namespace/name` for namespaced kinds, the name alone otherwise. */
export interface SupersedingObject {
  readonly namespace?: string;
  readonly name: string;
}

/** `a` or `a and b`: how upstream joins the fields (and their replacements) it names. */
const joined = (parts: readonly string[]): string => parts.join(' and ');

/**
 * The refusal for an object of `kind` whose spec stores a superseded field, or undefined
 * when it stores none. The messages are upstream's (`authz.SupersededFieldRefusal`), which
 * name every stored field and its replacement, so one edit fixes the object.
 */
export function supersededFieldRefusal(
  kind: SupersedingKind,
  obj: SupersedingObject,
  spec: unknown,
): Decision | undefined {
  const stored = storedSupersededFields(kind, spec);
  if (stored.length === 0) return undefined;
  return denied(ReasonSupersededFieldStored, supersededMessage(kind, obj, stored));
}

function replacementsOf(kind: SupersedingKind, stored: readonly string[]): string[] {
  const entries: readonly Superseded[] = SUPERSEDED[kind];
  return stored.map((f) => entries.find((s) => s.field === f)?.replacement ?? f);
}

function supersededMessage(kind: SupersedingKind, obj: SupersedingObject, stored: readonly string[]): string {
  switch (kind) {
    case 'GitTarget':
      return (
        `GitTarget ${obj.namespace ?? ''}/${obj.name} still sets spec.allowedSourceNamespaces, which this release removed. ` +
        'It is refused rather than ignored, because ignoring it would leave a field that reads like a bound on which ' +
        'source namespaces reach this folder while enforcing nothing. Source-cluster RBAC now bounds what may be read ' +
        'and ClusterProvider.spec.accessFrom bounds which namespaces may wield it; a rules[].sourceNamespace other than ' +
        "a WatchRule's own namespace needs only ClusterProvider.spec.allowAnySourceNamespace. " +
        'Note that "*" no longer means "every namespace this GitTarget admits": it is every namespace the credential ' +
        'can read. Delete spec.allowedSourceNamespaces to clear this'
      );
    case 'GitProvider': {
      const replacement = replacementsOf(kind, stored);
      return (
        `GitProvider ${obj.namespace ?? ''}/${obj.name} still sets ${joined(stored)}, which moved to ${joined(replacement)} in this release. ` +
        'Writes through this provider are STOPPED rather than made at the default cadence and wording, because a ' +
        'folder committing on settings nobody chose is worse than one that is not committing. Set the values on each ' +
        'GitTarget that needs them, then remove them here'
      );
    }
    case 'ClusterProvider': {
      const replacement = replacementsOf(kind, stored);
      return (
        `ClusterProvider "${obj.name}" still sets ${joined(stored)}, renamed to ${joined(replacement)} in this release. ` +
        'Same shape, same default, same semantics: rename the key. It is refused rather than ignored because ' +
        'ignoring it would revoke what it grants without saying so'
      );
    }
    default:
      return kind satisfies never;
  }
}
