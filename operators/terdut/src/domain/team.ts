/**
 * A team's in-place updates (DESIGN §5: POST create, PUT rename, PUT oidc-groups):
 * compared with the team as the server holds it now, so that a rename made on the
 * server directly is undone at the next resync (the CR wins).
 */
import type { Team } from '../client/terdut-api.ts';

export interface TeamUpdates {
  /** PUT /api/teams/{id} {"name"} */
  readonly rename?: string;
  /** PUT /api/teams/{id}/oidc-groups; "" clears a group. */
  readonly oidcGroups?: { readonly member_group: string; readonly owner_group: string };
}

export function teamUpdates(
  spec: { readonly displayName: string; readonly oidc?: { memberGroup?: string; ownerGroup?: string } },
  live: Team,
): TeamUpdates {
  const member = spec.oidc?.memberGroup ?? '';
  const owner = spec.oidc?.ownerGroup ?? '';
  const groupsDiffer = (live.oidc_member_group ?? '') !== member || (live.oidc_owner_group ?? '') !== owner;
  return {
    ...(live.name === spec.displayName ? {} : { rename: spec.displayName }),
    ...(groupsDiffer ? { oidcGroups: { member_group: member, owner_group: owner } } : {}),
  };
}

/**
 * Adoption is not hijacking: a same-named team on the server is adopted only when no
 * other TerdutTeam of the same server already holds its ID.
 */
export function adoptable(
  candidateId: number,
  self: { readonly namespace: string; readonly name: string },
  others: readonly {
    readonly namespace: string;
    readonly name: string;
    readonly server?: string;
    readonly teamID?: number;
  }[],
  server: string,
): { readonly adopt: true } | { readonly adopt: false; readonly holder: string } {
  const holder = others.find(
    (o) =>
      o.teamID === candidateId &&
      o.server === server &&
      !(o.namespace === self.namespace && o.name === self.name),
  );
  return holder ? { adopt: false, holder: `${holder.namespace}/${holder.name}` } : { adopt: true };
}
