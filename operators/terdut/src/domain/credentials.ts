/**
 * When the operator's key is rotated (this project's answer to DESIGN §6 point 5): on the
 * `terdut.ryuvia.com/rotate` annotation taking a value not acted on yet, or once
 * `spec.credentials.rotateEvery` has passed since the key was minted.
 */
export type RotationDecision =
  | { readonly due: false; readonly nextInMs?: number }
  | { readonly due: true; readonly why: 'Annotation' | 'Period' };

export function rotationDue(input: {
  readonly annotation?: string;
  readonly actedOn?: string;
  readonly rotateEveryMs?: number;
  readonly mintedAt?: string;
  readonly now: number;
}): RotationDecision {
  if (input.annotation !== undefined && input.annotation !== '' && input.annotation !== input.actedOn) {
    return { due: true, why: 'Annotation' };
  }
  if (input.rotateEveryMs === undefined || input.mintedAt === undefined) return { due: false };
  const minted = Date.parse(input.mintedAt);
  if (Number.isNaN(minted)) return { due: true, why: 'Period' };
  const left = minted + input.rotateEveryMs - input.now;
  return left <= 0 ? { due: true, why: 'Period' } : { due: false, nextInMs: left };
}

/**
 * The namespaces that get a mirror of a server's key (§6.4): those where a TerdutTeam of
 * another namespace references the server and is permitted now. Revocation removes the
 * copy (§6.4: "revoked allowedTeams"); a revoked team's finalizer deletes its server-side
 * team with the server's own key, read in the server's namespace, never a new copy.
 */
export function mirrorNamespaces(
  teams: readonly { readonly namespace: string; readonly permitted: boolean }[],
): string[] {
  return [...new Set(teams.filter((t) => t.permitted).map((t) => t.namespace))].sort();
}
