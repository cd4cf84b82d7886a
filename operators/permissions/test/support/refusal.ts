/** What the apiserver answers a write our webhooks refuse, read the same way by every test. */
import assert from 'node:assert/strict';
import { isApiError } from '@operators/kit';

/** The error the apiserver answered a write with; fails when the write was admitted. */
export async function refusal(write: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await write;
  } catch (err) {
    if (isApiError(err)) return { code: err.code, message: err.message };
    throw err;
  }
  assert.fail('the apiserver admitted the write');
}

/** The prefix the apiserver gives a refusal by one of our webhooks (`userroles`, `scopes`, …). */
export const deniedBy = (resource: string): RegExp =>
  new RegExp(`admission webhook "${resource}\\.permissions\\.shturval\\.tech" denied the request: `);
