/**
 * A dead man's switch (DESIGN §4.4, §5): the server has no update verb, so a change is a
 * delete and a create. The diff is against what was last applied: recreated when the spec
 * differs from it (SpecChanged) or the server's copy does (ChangedOnServer); Missing when
 * the server lost it; Create when there is no ID yet. Spaces around a matcher's commas
 * and the spelling of a timeout (`15m`, `900s`) never count. The oracle is a decision
 * table over the generator's own values (pairs, seconds, severity).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { DeadmanSwitch } from '../src/client/terdut-api.ts';
import {
  DEFAULT_SEVERITY,
  desiredSwitch,
  normaliseMatcher,
  planSwitch,
  type SwitchPlan,
  type SwitchValues,
  valuesOf,
} from '../src/domain/deadman.ts';

/** A switch's content, as the generator knows it. */
interface Content {
  readonly pairs: readonly string[];
  readonly seconds: number;
  readonly severity: string;
}

const sameContent = (a: Content, b: Content): boolean =>
  a.seconds === b.seconds && a.severity === b.severity && a.pairs.join('\n') === b.pairs.join('\n');

const content: fc.Arbitrary<Content> = fc.record({
  pairs: fc.array(fc.constantFrom('alertname=Watchdog', 'cluster=prod', 'env=dev'), {
    minLength: 1,
    maxLength: 2,
  }),
  seconds: fc.constantFrom(60, 900),
  severity: fc.constantFrom('critical', 'warning'),
});

/** Pairs joined by commas with any spaces or tabs around each comma and at the ends. */
const rendered = (pairs: readonly string[]): fc.Arbitrary<string> =>
  fc
    .array(fc.constantFrom('', ' ', '  ', '\t'), { minLength: pairs.length * 2, maxLength: pairs.length * 2 })
    .map((pads) => pairs.map((p, i) => `${pads[2 * i]}${p}${pads[2 * i + 1]}`).join(','));

/** Whole seconds spelled in one of several ways. */
const spelled = (seconds: number): fc.Arbitrary<string> =>
  fc.constantFrom(
    `${seconds}s`,
    `${seconds * 1000}ms`,
    `${Math.floor(seconds / 60)}m${seconds % 60}s`,
    seconds % 60 === 0 ? `${seconds / 60}m` : `${seconds}s`,
  );

/** The spec a user writes for some content (severity left out when it is the default). */
const specFor = (c: Content) =>
  fc.tuple(rendered(c.pairs), spelled(c.seconds), fc.boolean()).map(([matcher, timeout, omitSeverity]) => ({
    teamRef: { name: 'platform-team' },
    name: 'prod-watchdog',
    matcher,
    timeout,
    ...(omitSeverity && c.severity === DEFAULT_SEVERITY ? {} : { severity: c.severity }),
  }));

/** The server's copy of some content, its matcher as spaced as anyone typed it. */
const liveFor = (c: Content): fc.Arbitrary<DeadmanSwitch> =>
  rendered(c.pairs).map((matcher) => ({
    id: 7,
    team_id: 42,
    name: 'prod-watchdog',
    matcher,
    timeout_seconds: c.seconds,
    severity: c.severity,
  }));

/** What status keeps: the content, normalised. */
const appliedOf = (c: Content): SwitchValues => ({
  matcher: c.pairs.join(','),
  timeoutSeconds: c.seconds,
  severity: c.severity,
});

/** The decision table. */
function oracle(
  desired: Content,
  applied: Content | undefined,
  live: Content | undefined,
  hasId: boolean,
): SwitchPlan {
  if (!hasId) return { kind: 'Create' };
  if (!live) return { kind: 'Missing' };
  if (!applied || !sameContent(desired, applied)) return { kind: 'Recreate', why: 'SpecChanged' };
  if (!sameContent(live, applied)) return { kind: 'Recreate', why: 'ChangedOnServer' };
  return { kind: 'InSync' };
}

describe('normalising a matcher', () => {
  it('ignores spaces around commas and at the ends', () => {
    assert.equal(normaliseMatcher('alertname=Watchdog, cluster=prod'), 'alertname=Watchdog,cluster=prod');
    assert.equal(normaliseMatcher(' alertname=Watchdog ,\tcluster=prod '), 'alertname=Watchdog,cluster=prod');
    assert.equal(normaliseMatcher('alertname=Watchdog'), 'alertname=Watchdog');
  });

  it('keeps the order of the pairs and what is inside them', () => {
    assert.equal(normaliseMatcher('b=2, a=1'), 'b=2,a=1');
    assert.equal(normaliseMatcher('a = 1, b=2'), 'a = 1,b=2');
  });

  it('gives the pairs joined by bare commas, however they are spaced', () => {
    fc.assert(
      fc.property(
        content.chain((c) => fc.tuple(fc.constant(c.pairs), rendered(c.pairs))),
        ([pairs, text]) => {
          assert.equal(normaliseMatcher(text), pairs.join(','));
        },
      ),
    );
  });
});

describe('the desired switch from a spec', () => {
  it('normalises the design’s example, severity defaulting to critical', () => {
    assert.deepEqual(
      desiredSwitch({
        teamRef: { name: 'platform-team' },
        name: 'prod-watchdog',
        matcher: 'alertname=Watchdog, cluster=prod',
        timeout: '15m',
      }),
      { matcher: 'alertname=Watchdog,cluster=prod', timeoutSeconds: 900, severity: 'critical' },
    );
    assert.equal(DEFAULT_SEVERITY, 'critical');
  });

  it('keeps a severity that is given', () => {
    const got = desiredSwitch({
      teamRef: { name: 't' },
      name: 'n',
      matcher: 'a=b',
      timeout: '1m',
      severity: 'warning',
    });
    assert.equal(got?.severity, 'warning');
  });

  it('is nothing when the timeout is not a positive duration', () => {
    for (const timeout of ['', '0', '0s', 'soon', '15', '-1m']) {
      assert.equal(
        desiredSwitch({ teamRef: { name: 't' }, name: 'n', matcher: 'a=b', timeout }),
        undefined,
        timeout,
      );
    }
  });

  it('reads the server’s copy the same way', () => {
    assert.deepEqual(
      valuesOf({
        id: 1,
        team_id: 2,
        name: 'x',
        matcher: 'a=b , c=d',
        timeout_seconds: 60,
        severity: 'warning',
      }),
      { matcher: 'a=b,c=d', timeoutSeconds: 60, severity: 'warning' },
    );
  });
});

describe('planning a switch', () => {
  const applied: SwitchValues = {
    matcher: 'alertname=Watchdog,cluster=prod',
    timeoutSeconds: 900,
    severity: 'critical',
  };
  const live: DeadmanSwitch = {
    id: 7,
    team_id: 42,
    name: 'prod-watchdog',
    matcher: 'alertname=Watchdog,cluster=prod',
    timeout_seconds: 900,
    severity: 'critical',
  };
  const desired = (matcher: string, timeout: string, severity?: string): SwitchValues => {
    const d = desiredSwitch({
      teamRef: { name: 'platform-team' },
      name: 'prod-watchdog',
      matcher,
      timeout,
      ...(severity ? { severity } : {}),
    });
    assert.ok(d);
    return d;
  };

  it('creates when there is no ID yet', () => {
    assert.deepEqual(planSwitch({ desired: applied, hasId: false }), { kind: 'Create' });
    assert.deepEqual(planSwitch({ desired: applied, applied, live, hasId: false }), { kind: 'Create' });
  });

  it('never recreates for a reformatted spec: spaces after commas, 900s for 15m', () => {
    assert.deepEqual(
      planSwitch({
        desired: desired('alertname=Watchdog, cluster=prod', '900s'),
        applied,
        live,
        hasId: true,
      }),
      { kind: 'InSync' },
    );
  });

  it('recreates when the spec changed since it was applied', () => {
    for (const d of [
      desired('alertname=Watchdog,cluster=staging', '15m'),
      desired('alertname=Watchdog,cluster=prod', '16m'),
      desired('alertname=Watchdog,cluster=prod', '15m', 'warning'),
    ]) {
      assert.deepEqual(planSwitch({ desired: d, applied, live, hasId: true }), {
        kind: 'Recreate',
        why: 'SpecChanged',
      });
    }
  });

  it('recreates when someone changed the server’s copy directly', () => {
    for (const l of [
      { ...live, matcher: 'alertname=Watchdog' },
      { ...live, timeout_seconds: 60 },
      { ...live, severity: 'warning' },
    ]) {
      assert.deepEqual(planSwitch({ desired: applied, applied, live: l, hasId: true }), {
        kind: 'Recreate',
        why: 'ChangedOnServer',
      });
    }
  });

  it('does not take spaces in the server’s matcher for a change', () => {
    const spaced = { ...live, matcher: 'alertname=Watchdog , cluster=prod' };
    assert.deepEqual(planSwitch({ desired: applied, applied, live: spaced, hasId: true }), {
      kind: 'InSync',
    });
  });

  it('reports Missing when the server lost a switch it had an ID for', () => {
    assert.deepEqual(planSwitch({ desired: applied, applied, hasId: true }), { kind: 'Missing' });
  });

  it('follows the decision table for any desired, applied and live switch', () => {
    // Applied often equals desired, and live often equals applied, so every row is reached.
    const maybeLike = (c: Content) => fc.option(fc.oneof(fc.constant(c), content), { nil: undefined });
    const triple = content
      .chain((d) => fc.tuple(fc.constant(d), maybeLike(d)))
      .chain(([d, a]) => fc.tuple(fc.constant(d), fc.constant(a), maybeLike(a ?? d), fc.boolean()))
      .chain(([d, a, l, hasId]) =>
        fc.tuple(
          fc.constant({ d, a, l, hasId }),
          specFor(d),
          l ? liveFor(l).map((x): DeadmanSwitch | undefined => x) : fc.constant(undefined),
        ),
      );
    fc.assert(
      fc.property(triple, ([{ d, a, l, hasId }, spec, liveSwitch]) => {
        const desiredValues = desiredSwitch(spec);
        assert.ok(desiredValues, `${spec.timeout} is a timeout`);
        const got = planSwitch({
          desired: desiredValues,
          ...(a ? { applied: appliedOf(a) } : {}),
          ...(liveSwitch ? { live: liveSwitch } : {}),
          hasId,
        });
        assert.deepEqual(got, oracle(d, a, l, hasId));
      }),
      { numRuns: 1000 },
    );
  });
});
