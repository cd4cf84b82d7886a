/**
 * What the bridge answers, without an apiserver: an unknown host is a 404, a record it
 * cannot read a 422 listing the problems, a toggle on a shared gateway a 409 with the
 * reason the EdgeSite's status gives (`CarriedBySharedEdge`) and a message naming the
 * edge, a toggle elsewhere the manifest with that switch set; after the dry-run, the
 * manifest only when the apiserver accepted it. The request body of a toggle is read
 * strictly. Statuses and messages are written out here.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  answerDryRun,
  BridgeReason,
  classifyDryRun,
  type EdgeSiteManifest,
  parseToggle,
  planManifest,
  STATUS_OF,
} from '../src/domain/bridge/index.ts';
import { blogRecord, shopRecord } from './support/bridge-records.ts';

const SHOP_MANIFEST: EdgeSiteManifest = {
  apiVersion: 'edge.exoledge.io/v1alpha1',
  kind: 'EdgeSite',
  metadata: { name: 'shop', namespace: 'shop' },
  spec: { domains: ['shop.example.com'], upstream: { name: 'docs', port: 80 } },
};

describe('the bridge plans its answer from the directory', () => {
  it('answers 404 UnknownHost for a host the console has no record of', () => {
    const plan = planManifest('nowhere.example.com', undefined);
    assert.deepEqual(plan, {
      kind: 'Refusal',
      reason: 'UnknownHost',
      message: "the console's directory has no record for nowhere.example.com",
    });
    assert.equal(STATUS_OF[BridgeReason.UnknownHost], 404);
  });

  it('answers 422 MalformedRecord with every problem of a record it cannot read', () => {
    const plan = planManifest('shop.example.com', {
      kind: 'Malformed',
      problems: ['switches.waf: expected true or false', 'upstream.port: expected a number'],
    });
    assert.deepEqual(plan, {
      kind: 'Refusal',
      reason: 'MalformedRecord',
      message:
        "the console's record for shop.example.com cannot be read: switches.waf: expected true or false; upstream.port: expected a number",
    });
    assert.equal(STATUS_OF[BridgeReason.MalformedRecord], 422);
  });

  it('submits the rendered manifest to the dry-run for a readable record', () => {
    const plan = planManifest('shop.example.com', { kind: 'Record', record: shopRecord() });
    assert.equal(plan.kind, 'DryRun');
    if (plan.kind === 'DryRun') assert.equal(plan.manifest.spec.security?.challenge, false);
  });

  it('sets the toggled switch, and only it, on a site with its own gateway', () => {
    const plan = planManifest(
      'shop.example.com',
      { kind: 'Record', record: shopRecord() },
      { switch: 'waf', enabled: false },
    );
    assert.equal(plan.kind, 'DryRun');
    if (plan.kind !== 'DryRun') return;
    assert.deepEqual(plan.manifest.spec.security, {
      waf: false,
      challenge: false,
      sensitiveFiles: true,
      blocklists: ['proxies', 'cve-2024-3400'],
      allowlists: ['payment'],
    });
  });

  it('refuses any toggle on a shared gateway with 409 CarriedBySharedEdge, naming the shared edge', () => {
    for (const toggle of [
      { switch: 'waf', enabled: true },
      { switch: 'challenge', enabled: false },
      { switch: 'sensitiveFiles', enabled: true },
    ] as const) {
      const plan = planManifest('blog.example.com', { kind: 'Record', record: blogRecord() }, toggle);
      assert.equal(plan.kind, 'Refusal');
      if (plan.kind !== 'Refusal') return;
      assert.equal(plan.reason, 'CarriedBySharedEdge');
      assert.match(
        plan.message,
        new RegExp(`^${toggle.switch} of blog\\.example\\.com is carried by the shared edge`),
      );
      assert.match(plan.message, /joins the shared gateway edge\/shared/);
    }
    assert.equal(STATUS_OF[BridgeReason.CarriedBySharedEdge], 409);
  });

  it("names the shared gateway in the site's namespace when its gatewayRef gives none", () => {
    const record = { ...blogRecord(), gatewayRef: { name: 'shared' } };
    const plan = planManifest(
      'blog.example.com',
      { kind: 'Record', record },
      { switch: 'waf', enabled: true },
    );
    assert.equal(plan.kind, 'Refusal');
    if (plan.kind === 'Refusal') assert.match(plan.message, /joins the shared gateway blog\/shared,/);
  });

  it('still renders the manifest of a shared site when nothing is toggled', () => {
    const plan = planManifest('blog.example.com', { kind: 'Record', record: blogRecord() });
    assert.equal(plan.kind, 'DryRun');
  });
});

describe("the apiserver's dry-run decides whether the manifest goes out", () => {
  it('hands the manifest out when the apiserver accepted it', () => {
    assert.deepEqual(answerDryRun(SHOP_MANIFEST, { kind: 'Accepted' }), {
      kind: 'Manifest',
      manifest: SHOP_MANIFEST,
    });
  });

  it("refuses with 422 DryRunRefused and the apiserver's own message when it refused the manifest", () => {
    const message =
      'EdgeSite.edge.exoledge.io "shop" is invalid: spec.domains[0]: Invalid value: "string": a domain has no scheme';
    assert.deepEqual(answerDryRun(SHOP_MANIFEST, { kind: 'Refused', message }), {
      kind: 'Refusal',
      reason: 'DryRunRefused',
      message,
    });
    assert.equal(STATUS_OF[BridgeReason.DryRunRefused], 422);
  });

  it('refuses with 502 DryRunFailed, and no manifest, when the apiserver gave no verdict', () => {
    assert.deepEqual(
      answerDryRun(SHOP_MANIFEST, { kind: 'NoVerdict', message: 'the apiserver is unreachable' }),
      {
        kind: 'Refusal',
        reason: 'DryRunFailed',
        message:
          'the apiserver could not validate EdgeSite shop/shop, so no manifest is handed out: the apiserver is unreachable',
      },
    );
    assert.equal(STATUS_OF[BridgeReason.DryRunFailed], 502);
  });

  it('reads a verdict from the status of the answer: 2xx accepted, 422 and 400 refused, the rest no verdict', () => {
    const status = (code: number, message: string) => ({ kind: 'Status', status: 'Failure', code, message });
    assert.deepEqual(classifyDryRun(200, {}), { kind: 'Accepted' });
    assert.deepEqual(classifyDryRun(201, {}), { kind: 'Accepted' });
    assert.deepEqual(classifyDryRun(422, status(422, 'spec.domains[0]: a domain has no scheme')), {
      kind: 'Refused',
      message: 'spec.domains[0]: a domain has no scheme',
    });
    assert.deepEqual(classifyDryRun(400, status(400, 'strict decoding error: unknown field "spec.wat"')), {
      kind: 'Refused',
      message: 'strict decoding error: unknown field "spec.wat"',
    });
    assert.deepEqual(classifyDryRun(403, status(403, 'edgesites is forbidden: User "x" cannot patch')), {
      kind: 'NoVerdict',
      message: 'the apiserver answered 403: edgesites is forbidden: User "x" cannot patch',
    });
    assert.deepEqual(classifyDryRun(404, status(404, 'namespaces "shop" not found')), {
      kind: 'NoVerdict',
      message: 'the apiserver answered 404: namespaces "shop" not found',
    });
    assert.deepEqual(classifyDryRun(503, 'upstream connect error\n'), {
      kind: 'NoVerdict',
      message: 'the apiserver answered 503: upstream connect error',
    });
  });
});

describe('the body of a toggle', () => {
  it('is {switch, enabled} with a known switch and a boolean', () => {
    assert.deepEqual(parseToggle('{"switch":"sensitiveFiles","enabled":false}'), {
      kind: 'Toggle',
      toggle: { switch: 'sensitiveFiles', enabled: false },
    });
  });

  it('is refused, saying what is expected, when it is not', () => {
    const bad: [string, RegExp][] = [
      [
        'not json',
        /^the body is not JSON: expected a JSON object \{"switch": "waf" \| "challenge" \| "sensitiveFiles"/,
      ],
      ['[]', /^expected a JSON object/],
      [
        '{"switch":"grpc","enabled":true}',
        /^switch must be one of waf, challenge, sensitiveFiles, got "grpc"/,
      ],
      ['{"enabled":true}', /^switch must be one of .*, got nothing/],
      ['{"switch":"waf","enabled":"false"}', /^enabled must be true or false, got "false"/],
      ['{"switch":"waf","enabled":true,"host":"x"}', /^unknown field "host"/],
    ];
    for (const [body, message] of bad) {
      const parsed = parseToggle(body);
      assert.equal(parsed.kind, 'BadToggle', body);
      if (parsed.kind === 'BadToggle') assert.match(parsed.message, message, body);
    }
  });
});
