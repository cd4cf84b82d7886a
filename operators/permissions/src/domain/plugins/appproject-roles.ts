/**
 * Our roles in an Argo CD AppProject's `spec.roles`, merged into a list that people and
 * other tools also write. A role is ours when its name starts with `shturval-` AND its
 * description is exactly `permissions.shturval.tech <ns>/<Kind>/<name>/<permission>`:
 * the prefix alone could be typed by anyone, the description alone could be copied, and
 * both together also say which owner's role it is. Only that owner's roles are replaced;
 * every other role keeps its place and its content.
 *
 * Name: `shturval-<10 hex of sha256(owner id)>-<permission>` (the permission's `.`
 * become `-`): Argo CD takes role names of letters, digits, `-` and `_` only, starting
 * and ending with a letter or digit, and a role name is unique in its project. The hash
 * makes the name unique per (role, permission) whatever the lengths; the permission
 * keeps it readable in the Argo CD UI.
 *
 * Policies: `p, proj:<project>:<role>, <resource>, <action>, <project>/<object>, allow`,
 * the form Argo CD validates for project roles (objects relative to the project).
 * Groups: the subject's name. Argo CD turns each group into `g, <group>,
 * proj:<project>:<role>` and matches it against the token's `sub` and group claims, so a
 * user's name works there as well as a group's.
 */
import { createHash } from 'node:crypto';
import type { ArgoCdPolicy } from '../../api/permission.ts';
import { csvField, type PolicyOwner, policyFieldError, policyOwnerId } from './argocd-policy-csv.ts';

/** The prefix of every role name we write. */
export const ROLE_PREFIX = 'shturval-';
/** The first word of the description of every role we write. */
export const ROLE_DESCRIPTION_MARKER = 'permissions.shturval.tech';

/** One entry of AppProject `spec.roles` (argoproj.io/v1alpha1 ProjectRole); fields we do not know are kept. */
export interface ProjectRole {
  readonly name: string;
  readonly description?: string;
  readonly policies?: readonly string[];
  readonly groups?: readonly string[];
  readonly [field: string]: unknown;
}

/** The role name of one owner. */
export function projectRoleName(owner: PolicyOwner): string {
  const hash = createHash('sha256').update(policyOwnerId(owner)).digest('hex').slice(0, 10);
  return `${ROLE_PREFIX}${hash}-${owner.permission.replace(/[^-_a-zA-Z0-9]/g, '-')}`;
}

/** The description that marks a role as this owner's. */
export function projectRoleDescription(owner: PolicyOwner): string {
  return `${ROLE_DESCRIPTION_MARKER} ${policyOwnerId(owner)}`;
}

/** Whether `role` is the one this owner wrote. */
export function isOwnedRole(role: ProjectRole, owner: PolicyOwner): boolean {
  return role.name.startsWith(ROLE_PREFIX) && role.description === projectRoleDescription(owner);
}

export type DesiredRole =
  | { readonly kind: 'ok'; readonly role: ProjectRole }
  | { readonly kind: 'invalid'; readonly message: string };

/**
 * The role granting `subject` the `policies` in `project`. Refuses what Argo CD could not
 * read back: a field with a comma, a quote or a control character (project policies
 * are split on commas, without CSV quoting).
 */
export function projectRole(
  owner: PolicyOwner,
  project: string,
  subject: string,
  policies: readonly ArgoCdPolicy[],
): DesiredRole {
  const name = projectRoleName(owner);
  for (const [i, p] of policies.entries()) {
    for (const [what, value] of Object.entries(p)) {
      const err = policyFieldError(value) ?? (/[,"]/.test(value) ? 'contains a comma or a quote' : undefined);
      if (err)
        return invalid(`Argo CD project ${project} policies[${i}].${what} ${JSON.stringify(value)} ${err}`);
    }
  }
  const subjectErr = policyFieldError(subject);
  if (subjectErr) return invalid(`Argo CD project role group ${JSON.stringify(subject)} ${subjectErr}`);
  const lines = policies.map((p) =>
    ['p', `proj:${project}:${name}`, p.resource, p.action, `${project}/${p.object}`, 'allow']
      .map(csvField)
      .join(', '),
  );
  return {
    kind: 'ok',
    role: {
      name,
      description: projectRoleDescription(owner),
      policies: [...new Set(lines)],
      groups: [subject],
    },
  };
}

function invalid(message: string): DesiredRole {
  return { kind: 'invalid', message };
}

/**
 * `existing` with this owner's roles replaced by `desired` (in the place of the first of
 * them, or appended when there was none) or removed (`desired` undefined). Every other
 * role stays, in order, unchanged.
 */
export function mergeProjectRoles(
  existing: readonly ProjectRole[] | undefined,
  owner: PolicyOwner,
  desired: ProjectRole | undefined,
): ProjectRole[] {
  const out: ProjectRole[] = [];
  let placed = false;
  for (const role of existing ?? []) {
    if (!isOwnedRole(role, owner)) {
      out.push(role);
    } else if (desired && !placed) {
      out.push(desired);
      placed = true;
    }
  }
  if (desired && !placed) out.push(desired);
  return out;
}
