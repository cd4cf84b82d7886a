/** What a failed team call means for a TerdutTeam (src/domain/server-refusal.ts): a pure decision. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { teamCallRefusal } from '../src/domain/server-refusal.ts';

describe('a failed team call', () => {
  it('a 403 is TeamPermissionDenied, naming the call, the missing right and the fix', () => {
    const r = teamCallRefusal({
      status: 403,
      message: 'POST /api/teams: server returned 403: forbidden',
      serverKey: 'oncall/terdut',
    });
    assert.equal(r.reason, 'TeamPermissionDenied');
    assert.equal(
      r.message,
      'POST /api/teams: server returned 403: forbidden: the server refuses user terdut-operator the right to manage ' +
        'teams on oncall/terdut. Give terdut-operator that right on the server (on a server that reserves teams to ' +
        'admins: make it an admin there); the operator retries at each resync and needs no restart',
    );
  });

  it('any other status, or none (nothing heard), is a ServerError with the client’s message as it is', () => {
    fc.assert(
      fc.property(
        fc.option(
          fc.integer({ min: 400, max: 599 }).filter((s) => s !== 403),
          { nil: undefined },
        ),
        fc.string(),
        (status, message) => {
          assert.deepEqual(teamCallRefusal({ status, message, serverKey: 'a/b' }), {
            reason: 'ServerError',
            message,
          });
        },
      ),
      { numRuns: 200 },
    );
  });
});
