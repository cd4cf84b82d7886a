/**
 * The operator's key and its copies (DESIGN §6): rotation is due when the
 * `terdut.ryuvia.com/rotate` annotation is non-empty and differs from the value acted on,
 * or once rotateEvery has passed since the key was minted; mirrors go to the namespaces
 * with a permitted team or a team still holding a server-side team (revocation stops
 * changes, not clean-up); and the names of the Secrets are the design's. Oracles: the
 * generator's own mint time (a number, never re-parsed) and a set built by hand.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { mirrorNamespaces, type RotationDecision, rotationDue } from '../src/domain/credentials.ts';
import {
  CREDENTIALS_KEYS,
  credentialsSecretName,
  MIRRORED_KEYS,
  mirrorSecretName,
  ROTATE_ANNOTATION,
  serverLabelValue,
  webhookSecretName,
} from '../src/domain/names.ts';

const HOUR = 3_600_000;
const MINTED = '2025-01-01T00:00:00Z';
const MINTED_MS = Date.UTC(2025, 0, 1);

describe('when the operator’s key is rotated', () => {
  it('rotates when the annotation takes a value for the first time', () => {
    assert.deepEqual(rotationDue({ annotation: 'now', now: MINTED_MS }), { due: true, why: 'Annotation' });
  });

  it('rotates when the annotation changes to a value not acted on, even right after minting', () => {
    assert.deepEqual(
      rotationDue({
        annotation: 'again',
        actedOn: 'now',
        rotateEveryMs: 24 * HOUR,
        mintedAt: MINTED,
        now: MINTED_MS,
      }),
      { due: true, why: 'Annotation' },
    );
  });

  it('does not rotate again for an annotation already acted on', () => {
    assert.deepEqual(rotationDue({ annotation: 'now', actedOn: 'now', now: MINTED_MS }), { due: false });
  });

  it('does not rotate for an empty annotation', () => {
    assert.deepEqual(rotationDue({ annotation: '', now: MINTED_MS }), { due: false });
    assert.deepEqual(rotationDue({ annotation: '', actedOn: 'now', now: MINTED_MS }), { due: false });
  });

  it('rotates once rotateEvery has passed since minting, and says how long until then before', () => {
    const input = { rotateEveryMs: 24 * HOUR, mintedAt: MINTED };
    assert.deepEqual(rotationDue({ ...input, now: MINTED_MS + 23 * HOUR }), { due: false, nextInMs: HOUR });
    assert.deepEqual(rotationDue({ ...input, now: MINTED_MS + 24 * HOUR - 1 }), { due: false, nextInMs: 1 });
    assert.deepEqual(rotationDue({ ...input, now: MINTED_MS + 24 * HOUR }), { due: true, why: 'Period' });
    assert.deepEqual(rotationDue({ ...input, now: MINTED_MS + 25 * HOUR }), { due: true, why: 'Period' });
  });

  it('never rotates by time without rotateEvery', () => {
    assert.deepEqual(rotationDue({ mintedAt: MINTED, now: MINTED_MS + 10 * 365 * 24 * HOUR }), {
      due: false,
    });
  });

  it('rotates a key whose mint time cannot be read, so that a readable one is written', () => {
    assert.deepEqual(rotationDue({ rotateEveryMs: HOUR, mintedAt: 'yesterday', now: MINTED_MS }), {
      due: true,
      why: 'Period',
    });
  });

  it('is due by the annotation rule, else by the period, for any annotation, period and time', () => {
    const mark = fc.option(fc.constantFrom('', 'now', 'again', '2025-06-01'), { nil: undefined });
    const input = fc.record({
      annotation: mark,
      actedOn: mark,
      rotateEveryMs: fc.option(fc.constantFrom(HOUR, 24 * HOUR, 7 * 24 * HOUR), { nil: undefined }),
      minted: fc.option(
        fc.record({
          ms: fc.integer({ min: Date.UTC(2024, 0, 1), max: Date.UTC(2030, 0, 1) }),
          wholeSeconds: fc.boolean(),
        }),
        { nil: undefined },
      ),
      offset: fc.oneof(
        fc.integer({ min: -HOUR, max: 8 * 24 * HOUR }),
        fc.constantFrom(-1, 0, 1, HOUR - 1, HOUR, HOUR + 1, 24 * HOUR, 7 * 24 * HOUR, 7 * 24 * HOUR - 1),
      ),
    });
    fc.assert(
      fc.property(input, ({ annotation, actedOn, rotateEveryMs, minted, offset }) => {
        // The mint time as the Secret records it: RFC 3339, to the millisecond or to the second.
        const mintedMs = minted
          ? minted.wholeSeconds
            ? minted.ms - (minted.ms % 1000)
            : minted.ms
          : undefined;
        const mintedAt =
          mintedMs === undefined
            ? undefined
            : minted?.wholeSeconds
              ? new Date(mintedMs).toISOString().replace(/\.\d{3}Z$/, 'Z')
              : new Date(mintedMs).toISOString();
        const now = (mintedMs ?? MINTED_MS) + offset;

        let want: RotationDecision;
        if (annotation !== undefined && annotation.length > 0 && annotation !== actedOn) {
          want = { due: true, why: 'Annotation' };
        } else if (rotateEveryMs === undefined || mintedMs === undefined) {
          want = { due: false };
        } else {
          const elapsed = now - mintedMs;
          want =
            elapsed >= rotateEveryMs
              ? { due: true, why: 'Period' }
              : { due: false, nextInMs: rotateEveryMs - elapsed };
        }
        assert.deepEqual(
          rotationDue({
            ...(annotation === undefined ? {} : { annotation }),
            ...(actedOn === undefined ? {} : { actedOn }),
            ...(rotateEveryMs === undefined ? {} : { rotateEveryMs }),
            ...(mintedAt === undefined ? {} : { mintedAt }),
            now,
          }),
          want,
        );
      }),
      { numRuns: 1000 },
    );
  });

  it('is asked for with the terdut.ryuvia.com/rotate annotation', () => {
    assert.equal(ROTATE_ANNOTATION, 'terdut.ryuvia.com/rotate');
  });
});

describe('where the credentials are mirrored (§6.4)', () => {
  it('mirrors into the namespace of a permitted team', () => {
    assert.deepEqual(mirrorNamespaces([{ namespace: 'team-a', permitted: true }]), ['team-a']);
  });

  it('drops the mirror of a revoked team, even one that still holds a server-side team (its finalizer uses the server’s own key)', () => {
    assert.deepEqual(mirrorNamespaces([{ namespace: 'team-a', permitted: false }]), []);
  });

  it('makes one mirror per namespace, however many teams are there, in a stable order', () => {
    assert.deepEqual(
      mirrorNamespaces([
        { namespace: 'team-b', permitted: true },
        { namespace: 'team-a', permitted: true },
        { namespace: 'team-b', permitted: false },
        { namespace: 'team-c', permitted: false },
      ]),
      ['team-a', 'team-b'],
    );
  });

  it('is the sorted set of namespaces with a permitted team, and nothing else', () => {
    const team = fc.record({
      namespace: fc.constantFrom('team-a', 'team-b', 'team-c', 'infra', 'a-team'),
      permitted: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(team, { maxLength: 12 }), (teams) => {
        const wanted: string[] = [];
        for (const t of teams) if (t.permitted && !wanted.includes(t.namespace)) wanted.push(t.namespace);
        wanted.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
        assert.deepEqual(mirrorNamespaces(teams), wanted);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('the server label on credential Secrets', () => {
  it('is `<namespace>.<name>` while that fits in 63 characters', () => {
    assert.equal(serverLabelValue('oncall', 'terdut'), 'oncall.terdut');
    const fits = `${'n'.repeat(30)}.${'s'.repeat(32)}`;
    assert.equal(fits.length, 63);
    assert.equal(serverLabelValue('n'.repeat(30), 's'.repeat(32)), fits);
  });

  it('is a readable prefix and a hash when longer (a fixed example)', () => {
    const ns = 'platform-oncall-production-europe-west';
    const name = 'terdut-server-for-the-whole-company';
    // The first 10 hex characters of sha256("<ns>.<name>"), computed once with `sha256sum`.
    assert.equal(
      serverLabelValue(ns, name),
      'platform-oncall-production-europe-west.terdut-server-b1a3d4a8f9',
    );
  });

  it('is always a valid label value, stable, and tells apart different servers', () => {
    const dns = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/);
    const crName = fc.stringMatching(/^[a-z0-9]([a-z0-9.-]{0,120}[a-z0-9])?$/);
    const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
    fc.assert(
      fc.property(dns, crName, dns, crName, (ns1, n1, ns2, n2) => {
        const a = serverLabelValue(ns1, n1);
        assert.ok(a.length <= 63, a);
        assert.match(a, labelValue);
        assert.equal(serverLabelValue(ns1, n1), a);
        if (`${ns1}.${n1}` !== `${ns2}.${n2}`) assert.notEqual(serverLabelValue(ns2, n2), a);
      }),
      { numRuns: 500 },
    );
  });
});

describe('the names of the credential Secrets (§4.5, §6)', () => {
  it('are the design’s names', () => {
    assert.equal(credentialsSecretName('terdut'), 'terdut-operator-credentials');
    assert.equal(mirrorSecretName('terdut', 'platform-oncall'), 'terdut.platform-oncall-terdut-credentials');
    assert.equal(webhookSecretName('prod-alertmanager'), 'prod-alertmanager-terdut-webhook');
    assert.deepEqual(CREDENTIALS_KEYS, {
      apiKey: 'apiKey',
      keyID: 'keyID',
      userID: 'userID',
      adminKey: 'adminKey',
      adminKeyID: 'adminKeyID',
      adminUserID: 'adminUserID',
    });
    assert.deepEqual(MIRRORED_KEYS, ['apiKey', 'keyID', 'userID'], 'a mirror never carries the admin key');
  });

  it('gives each (server, namespace) its own mirror name, a valid Secret name', () => {
    // Short names over a tiny alphabet as often as long ones, so that near-collisions
    // (`a.b` in `a`, `b-a` in `a-b`) are tried.
    const dnsLabel = fc.oneof(
      fc.stringMatching(/^[ab]([ab-]{0,3}[ab])?$/),
      fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/),
    );
    const serverName = fc.oneof(
      fc.stringMatching(/^[ab]([ab.-]{0,3}[ab])?$/),
      fc.stringMatching(/^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/),
    );
    const subdomain = /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/;
    fc.assert(
      fc.property(serverName, dnsLabel, serverName, dnsLabel, (s1, n1, s2, n2) => {
        const a = mirrorSecretName(s1, n1);
        assert.ok(subdomain.test(a) && a.length <= 253, a);
        if (s1 !== s2 || n1 !== n2) assert.notEqual(a, mirrorSecretName(s2, n2));
      }),
      { numRuns: 1000 },
    );
  });
});
