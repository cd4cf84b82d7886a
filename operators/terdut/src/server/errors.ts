/**
 * How the terdut-server stand-in says no: every error message it sends, by name, and the
 * error type the store and the routes throw. One place for the texts keeps the wire
 * contract (`{"error": "<message>"}`) greppable and the tests honest about the exact words.
 */

export const MSG = {
  unauthorized: 'unauthorized',
  forbidden: 'forbidden',
  notFound: 'not found',
  methodNotAllowed: 'method not allowed',
  invalidJson: 'invalid JSON',
  bodyNotObject: 'request body must be a JSON object',
  bodyTooLarge: 'request body too large',
  internal: 'internal error',
  alreadyBootstrapped: 'already bootstrapped',
  usernameTaken: 'username already taken',
  teamNameTaken: 'team name already taken',
  switchNameTaken: 'switch name already taken',
  integrationNameTaken: 'integration name already taken',
  userNotFound: 'user not found',
  apiKeyNotFound: 'api key not found',
  teamNotFound: 'team not found',
  switchNotFound: 'switch not found',
  integrationNotFound: 'integration not found',
  injectedFailure: 'injected failure',
} as const;

/** A required field that is absent, null or an empty string. */
export function fieldRequired(field: string): string {
  return `${field} is required`;
}

/** A field that is present with the wrong type or value, e.g. `timeout_seconds must be a positive integer`. */
export function fieldMustBe(field: string, what: string): string {
  return `${field} must be ${what}`;
}

/** An escalation target naming a user that does not exist. */
export function unknownUser(field: string, id: number): string {
  return `${field}: unknown user_id ${id}`;
}

/** A refusal with the HTTP status to answer; the message becomes `{"error": message}`. */
export class ApiError extends Error {
  readonly status: number;

  constructor(status: number, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
  }
}
