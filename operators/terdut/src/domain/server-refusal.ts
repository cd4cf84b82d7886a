/**
 * What a failed team call means for the TerdutTeam's Ready condition. The bot user
 * `terdut-operator` is created as a plain user (POST /api/users gives no role), and the
 * operator needs exactly one right beyond its own keys: managing teams and their
 * escalation policies, dead man's switches and integrations. A server that reserves
 * that to admins answers 403; the message names the missing right and the fix, instead
 * of a bare `server returned 403`.
 */
import { BOT_USERNAME } from './names.ts';
import { Reason } from './reasons.ts';

export interface Refusal {
  readonly reason: typeof Reason.TeamPermissionDenied | typeof Reason.ServerError;
  readonly message: string;
}

export function teamCallRefusal(input: {
  /** The HTTP status, when the server answered. */
  readonly status: number | undefined;
  /** The client's error text (method, route, status, the server's message; never a key). */
  readonly message: string;
  /** `<namespace>/<name>` of the TerdutServer. */
  readonly serverKey: string;
}): Refusal {
  if (input.status !== 403) return { reason: Reason.ServerError, message: input.message };
  return {
    reason: Reason.TeamPermissionDenied,
    message:
      `${input.message}: the server refuses user ${BOT_USERNAME} the right to manage teams on ${input.serverKey}. ` +
      `Give ${BOT_USERNAME} that right on the server (on a server that reserves teams to admins: make it an admin ` +
      'there); the operator retries at each resync and needs no restart',
  };
}
