/**
 * Every condition reason the operator reports, one constant each: the conditions table
 * of docs/terdut.md lists exactly these (a test holds the two together).
 */
export const Reason = {
  /** Everything the spec asks for is in place on the server and in the cluster. */
  Synced: 'Synced',
  /** A team's serverRef crosses namespaces and the server's allowedTeams does not admit this namespace. */
  RefNotPermitted: 'RefNotPermitted',
  /** The referenced TerdutTeam has no server-side ID yet (or is not Ready). */
  WaitingForTeam: 'WaitingForTeam',
  /** No TerdutTeam of that name in this namespace. */
  TeamNotFound: 'TeamNotFound',
  /** No TerdutServer where serverRef points. */
  ServerNotFound: 'ServerNotFound',
  /** The server is bootstrapped by someone else and no admin key was given (spec.credentials.adminKeySecretRef). */
  AdminCredentialRequired: 'AdminCredentialRequired',
  /** The operator's key for the server is not there yet (no bootstrap, no mirror). */
  CredentialsMissing: 'CredentialsMissing',
  /** The server answered an error, did not answer, or answered something that is not JSON. */
  ServerError: 'ServerError',
  /**
   * The server refused the operator's user (403) a team call: it reserves teams to users
   * with a right `terdut-operator` lacks. The message names the call and the fix.
   */
  TeamPermissionDenied: 'TeamPermissionDenied',
  /**
   * A key the server issued (the bootstrap's admin key, or a freshly minted key) could not
   * be written to the credentials Secret: the operator holds it in memory and writes it
   * first on the next attempt, before any other call.
   */
  CredentialsNotSaved: 'CredentialsNotSaved',
  /** An escalation target names a user the server does not have. */
  UnknownUser: 'UnknownUser',
  /** A same-named object on the server belongs to another CR: not adopted. */
  NameConflict: 'NameConflict',
  /** Another TerdutEscalationRule, older, already sets this team's policy. */
  PolicyConflict: 'PolicyConflict',
  /** The operator holds a working key of its own (bootstrapped, or minted with the admin key). */
  CredentialsReady: 'CredentialsReady',
  /** The database is wired: a DSN and its password. */
  DatabaseResolved: 'DatabaseResolved',
  /** The Deployment is not built yet (no database) or /healthz does not answer 200. */
  ServerNotHealthy: 'ServerNotHealthy',
  /** Deleting the object's server-side counterpart failed: the finalizer stays until it succeeds. */
  DeleteFailed: 'DeleteFailed',
  /** TerdutTeams still reference this server: it is deleted once they are gone. */
  TeamsRemaining: 'TeamsRemaining',
  /** The Zalando credentials Secret changed: the Deployment still runs with the old password. */
  KeyRotationNeeded: 'KeyRotationNeeded',
  /** The Deployment was restarted after the credentials changed. */
  RestartedAfterRotation: 'RestartedAfterRotation',
} as const;
export type Reason = (typeof Reason)[keyof typeof Reason];

/** Condition types. */
export const ConditionType = {
  Ready: 'Ready',
  /** Children: the server holds what the spec says. */
  Synced: 'Synced',
  /** TerdutServer: the database is wired. */
  DatabaseReady: 'DatabaseReady',
  /** TerdutServer: the operator has its own key. */
  Bootstrapped: 'Bootstrapped',
  /** A delete on the server failed; the finalizer holds. */
  Degraded: 'Degraded',
  /** TerdutServer: the database password changed under a running Deployment. */
  RestartNeeded: 'RestartNeeded',
} as const;

/**
 * Event reasons (§12): every externally visible action. A condition turning False for a
 * new reason is also a Warning Event with that reason (`announce`), so the reasons above
 * appear as Events too.
 */
export const EventReason = {
  /** The operator bootstrapped a fresh server (POST /api/bootstrap answered 201). */
  Bootstrapped: 'Bootstrapped',
  /** The operator's key was minted (after bootstrap, or with the admin key). */
  CredentialsMinted: 'CredentialsMinted',
  /** The operator's key was rotated and the old one deleted on the server. */
  KeyRotated: 'KeyRotated',
  /** The database password changed under running pods: restart them. */
  KeyRotationNeeded: 'KeyRotationNeeded',
  /** A team, switch or integration was created on the server. */
  Created: 'Created',
  /** A same-named object left by a create whose answer was lost was adopted. */
  Adopted: 'Adopted',
  /** Deleted and created again: the server has no update verb, a key was lost, or it was gone. */
  Recreated: 'Recreated',
  /** Changed in place: a rename, OIDC groups, a policy. */
  Updated: 'Updated',
  /** The server-side counterpart was deleted (the finalizer's work). */
  Deleted: 'Deleted',
  /** The server-side delete failed; the finalizer stays and it is retried. */
  DeleteFailed: 'DeleteFailed',
  /** Consent refused a cross-namespace reference (the transition). */
  RefNotPermitted: 'RefNotPermitted',
  /** A call to the server failed; retried with backoff. */
  SyncFailed: 'SyncFailed',
  /** A mirror of the credentials was written into a consuming namespace. */
  MirrorWritten: 'MirrorWritten',
  /** A mirror no team needs any more was deleted. */
  MirrorDeleted: 'MirrorDeleted',
} as const;
