/**
 * The operator's client for terdut-server (src/client/terdut-api.ts): how it reads the
 * answers the contract describes (JSON `{"error"}` on API routes, Go's plain-text 404 on
 * unknown ones, /healthz counting only 200), and its key check, against the terdut-server
 * stand-in (contract-faithful, not the real server) in both version modes, and against a
 * fixed-answer stub for the shapes the stand-in never sends.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { TerdutApi, TerdutApiError, TerdutErrorKind } from '../src/client/terdut-api.ts';
import { SERVER_VERSIONS, type StandIn, startStandIn } from '../src/server/stand-in.ts';

const open: { close(): Promise<void> }[] = [];
after(async () => {
  for (const o of open) await o.close();
});

/** A stub that answers every request with one fixed status, content type and body. */
async function stub(status: number, contentType: string, body: string): Promise<string> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': contentType, 'content-length': String(Buffer.byteLength(body)) });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  open.push({ close: () => new Promise<void>((r) => server.close(() => r())) });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function caught(p: Promise<unknown>): Promise<TerdutApiError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof TerdutApiError, String(err));
    return err;
  }
  assert.fail('expected a TerdutApiError');
}

describe('the terdut-server client reads the contract’s answers', () => {
  it('a plain-text `404 page not found` (an unknown route, as Go’s router answers) is a 404 with no server message', async () => {
    const base = await stub(404, 'text/plain; charset=utf-8', '404 page not found\n');
    const err = await caught(new TerdutApi({ baseUrl: base, apiKey: 'k' }).listTeams());
    assert.equal(err.kind, TerdutErrorKind.Http);
    assert.equal(err.status, 404);
    assert.equal(err.serverMessage, undefined);
    assert.equal(err.message, 'GET /api/teams: server returned 404');
  });

  it('a JSON `{"error"}` body gives the server’s message', async () => {
    const base = await stub(409, 'application/json', '{"error":"team name already taken"}');
    const err = await caught(new TerdutApi({ baseUrl: base, apiKey: 'k' }).createTeam('x'));
    assert.equal(err.status, 409);
    assert.equal(err.serverMessage, 'team name already taken');
    assert.equal(err.message, 'POST /api/teams: server returned 409: team name already taken');
  });

  it('/healthz is healthy on exactly 200: a 204 is a failure', async () => {
    const ok = await stub(200, 'application/json', '{"status":"ok"}');
    await new TerdutApi({ baseUrl: ok }).healthz();
    const noContent = await stub(204, 'text/plain', '');
    const err = await caught(new TerdutApi({ baseUrl: noContent }).healthz());
    assert.equal(err.status, 204);
    assert.equal(err.message, 'GET /healthz: server returned 204, not 200');
  });
});

for (const version of SERVER_VERSIONS) {
  describe(`the key check against the terdut-server stand-in as v${version} (contract-faithful, not the real server)`, () => {
    it('accepts a live key and refuses an unknown one with a 401, on a route this version serves', async () => {
      const si: StandIn = await startStandIn({ version });
      open.push(si);
      const boot = (await (
        await fetch(`${si.url}/api/bootstrap`, { method: 'POST', body: '{}' })
      ).json()) as {
        api_key: { key: string };
      };
      const api = new TerdutApi({ baseUrl: si.url });
      await api.withKey(boot.api_key.key).checkKey('terdut-operator');
      const err = await caught(api.withKey('f'.repeat(64)).checkKey('terdut-operator'));
      assert.equal(err.status, 401);
      assert.equal(err.serverMessage, 'unauthorized');
      assert.ok(!err.message.includes(boot.api_key.key), 'no key in the message');
    });
  });
}
