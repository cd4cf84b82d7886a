/**
 * What of a live object reaches Git, and its bytes. Expected objects and YAML are written
 * out here by hand; the round-trip properties read the YAML back with the `yaml` package's
 * own parser in YAML 1.1 mode (as kubectl's reader) and 1.2 mode (as kustomize's).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parse } from 'yaml';
import { sanitize, toYaml } from '../src/domain/mirror/sanitize.ts';

/** A Deployment as the apiserver returns it. */
const LIVE_DEPLOYMENT = {
  kind: 'Deployment',
  apiVersion: 'apps/v1',
  metadata: {
    annotations: {
      'deployment.kubernetes.io/revision': '3',
      'kubectl.kubernetes.io/last-applied-configuration': '{"apiVersion":"apps/v1","kind":"Deployment"}\n',
    },
    creationTimestamp: '2024-05-01T10:00:00Z',
    generation: 7,
    labels: { app: 'web' },
    managedFields: [{ manager: 'kubectl', operation: 'Apply', apiVersion: 'apps/v1' }],
    name: 'web',
    namespace: 'shop',
    resourceVersion: '123456',
    uid: '0b9f1c2e-0000-4000-8000-000000000001',
    selfLink: '/apis/apps/v1/namespaces/shop/deployments/web',
    ownerReferences: [{ apiVersion: 'v1', kind: 'Foo', name: 'owner', uid: 'x' }],
    finalizers: ['example.com/keep'],
  },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: 'web' } },
    template: {
      metadata: { labels: { app: 'web' } },
      spec: {
        containers: [
          {
            name: 'web',
            image: 'nginx:1.27',
            args: ['--listen', ':8080'],
            env: [{ name: 'GREETING', value: 'yes' }],
          },
        ],
      },
    },
  },
  status: { replicas: 2, readyReplicas: 2, conditions: [{ type: 'Available', status: 'True' }] },
};

const SANITIZED_DEPLOYMENT = {
  kind: 'Deployment',
  apiVersion: 'apps/v1',
  metadata: {
    annotations: { 'deployment.kubernetes.io/revision': '3' },
    labels: { app: 'web' },
    name: 'web',
    namespace: 'shop',
    finalizers: ['example.com/keep'],
  },
  spec: LIVE_DEPLOYMENT.spec,
};

/** The file for LIVE_DEPLOYMENT, written by hand. */
const DEPLOYMENT_YAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels:
    app: web
  annotations:
    deployment.kubernetes.io/revision: "3"
  finalizers:
  - example.com/keep
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.27
        args:
        - --listen
        - :8080
        env:
        - name: GREETING
          value: "yes"
`;

/** Recursively frozen, so that any write by the code under test throws. */
function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

/** JSON as the apiserver sends it: objects, arrays, strings, finite numbers, booleans, null. */
const trickyString = fc.constantFrom(
  'yes',
  'no',
  'on',
  'Off',
  'y',
  'N',
  'true',
  'NULL',
  '~',
  '',
  '0755',
  '0o17',
  '0x1F',
  '1e3',
  '1_000',
  '12:30',
  '2001-12-14',
  '.inf',
  '-.Inf',
  '.NaN',
  '<<',
  '=',
  '- x',
  'a: b',
  '#x',
  ' lead',
  'trail ',
  'line1\nline2\n',
  'trail \nx',
  '\ttab',
  'a\r\nb',
  '@at',
  '%YAML',
  '---',
  '...',
  '"q"',
  "'q'",
  'é',
  'x'.repeat(300),
  'x'.repeat(1100),
  `${'long words '.repeat(40)}end`,
  'x\u0085y',
  'a\u2028b',
  '\u2029',
  '\u0080',
  '\u007f',
  '\ufeffx',
  '\u00a0',
  ' \n',
  ' \n \n',
  '\tx\ny',
  '\n\tx',
  'def f():\n    x = 1\n    \n    return x\n',
);
/** Strings from the characters YAML treats specially, in any order. */
const yamlishString = fc
  .array(
    fc.constantFrom(
      ' ',
      '\t',
      '\n',
      '\r',
      'a',
      '0',
      '.',
      '-',
      ':',
      '#',
      '"',
      "'",
      '\\',
      '|',
      '>',
      '[',
      '{',
      ',',
      '&',
      '*',
      '!',
      '%',
      '@',
      '`',
      '?',
      '~',
      '<',
      'é',
      '\u0085',
      '\u2028',
      '\ufeff',
      '\u0000',
      '\u007f',
    ),
    { maxLength: 10 },
  )
  .map((cs) => cs.join(''));
const jsonString = fc.oneof(
  { arbitrary: trickyString, weight: 3 },
  { arbitrary: yamlishString, weight: 2 },
  { arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 12 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }), weight: 1 },
);
const { json } = fc.letrec((tie) => ({
  json: fc.oneof(
    { depthSize: 'small' },
    jsonString,
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('json'), { maxLength: 4 }),
    fc.dictionary(jsonString, tie('json'), { maxKeys: 4 }),
  ),
}));
/** Through JSON, as the apiserver's objects arrive (no -0, no undefined). */
const asJson = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const jsonObject = fc.dictionary(jsonString, json, { maxKeys: 6 }).map(asJson);

/** A live-looking object with every field sanitize removes, some of the time. */
const liveObject = fc
  .record(
    {
      apiVersion: fc.constantFrom('v1', 'apps/v1', 'serving.knative.dev/v1'),
      kind: fc.constantFrom('Service', 'ConfigMap', 'Deployment'),
      metadata: fc.record(
        {
          name: fc.constantFrom('web', 'db'),
          namespace: fc.constantFrom('shop', 'team-a'),
          uid: fc.uuid(),
          resourceVersion: fc.nat().map(String),
          generation: fc.nat(),
          creationTimestamp: fc.constant('2024-05-01T10:00:00Z'),
          selfLink: fc.constant('/api/v1/x'),
          deletionTimestamp: fc.constant('2024-05-02T10:00:00Z'),
          deletionGracePeriodSeconds: fc.nat(),
          managedFields: fc.array(jsonObject, { maxLength: 2 }),
          ownerReferences: fc.array(jsonObject, { maxLength: 2 }),
          labels: fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), fc.string({ maxLength: 5 })),
          annotations: fc.dictionary(
            fc.oneof(
              fc.constant('kubectl.kubernetes.io/last-applied-configuration'),
              fc.string({ maxLength: 6 }),
            ),
            fc.string({ maxLength: 8 }),
          ),
          extra: jsonObject,
        },
        { requiredKeys: ['name'] },
      ),
      spec: fc.record(
        {
          clusterIP: fc.constantFrom('10.0.0.1', 'None', ''),
          clusterIPs: fc.constantFrom(['10.0.0.1'], ['None'], [], ['10.0.0.1', 'fd00::1']),
          ports: fc.array(jsonObject, { maxLength: 2 }),
        },
        { requiredKeys: [] },
      ),
      status: jsonObject,
      data: jsonObject,
    },
    { requiredKeys: ['apiVersion', 'kind', 'metadata'] },
  )
  .map(asJson);

/** Reverses the key order of every object in `v`. */
function reverseKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reverseKeys);
  if (typeof v === 'object' && v !== null) {
    return Object.fromEntries(
      Object.entries(v)
        .reverse()
        .map(([k, x]) => [k, reverseKeys(x)]),
    );
  }
  return v;
}

describe('sanitize: what of a live object reaches Git', () => {
  it('drops status and every field the apiserver sets, keeping what a person wrote', () => {
    assert.deepEqual(sanitize(LIVE_DEPLOYMENT), SANITIZED_DEPLOYMENT);
  });

  it('drops kubectl last-applied annotation, and annotations when nothing else is left', () => {
    const only = sanitize({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' } },
    });
    assert.deepEqual(only, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } });
    const more = sanitize({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'c',
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}', team: 'a' },
      },
    });
    assert.deepEqual(more, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c', annotations: { team: 'a' } },
    });
  });

  it("drops a core Service's allocated cluster IPs but keeps a headless Service headless", () => {
    const allocated = sanitize({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 's' },
      spec: { clusterIP: '10.96.0.12', clusterIPs: ['10.96.0.12', 'fd00::12'], ports: [{ port: 80 }] },
    });
    assert.deepEqual(allocated, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 's' },
      spec: { ports: [{ port: 80 }] },
    });
    const headless = sanitize({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 's' },
      spec: { clusterIP: 'None', clusterIPs: ['None'], ports: [{ port: 80 }] },
    });
    assert.deepEqual(headless, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 's' },
      spec: { clusterIP: 'None', clusterIPs: ['None'], ports: [{ port: 80 }] },
    });
  });

  it('leaves spec.clusterIP of a Service kind outside the core group alone', () => {
    const knative = {
      apiVersion: 'serving.knative.dev/v1',
      kind: 'Service',
      metadata: { name: 's' },
      spec: { clusterIP: '10.0.0.1', clusterIPs: ['10.0.0.1'] },
    };
    assert.deepEqual(sanitize(knative), knative);
  });

  it('never changes the object it is given', () => {
    fc.assert(
      fc.property(liveObject, (obj) => {
        const before = structuredClone(obj);
        sanitize(deepFreeze(obj));
        assert.deepEqual(obj, before);
      }),
    );
  });

  it('is idempotent and leaves none of the removed fields', () => {
    fc.assert(
      fc.property(liveObject, (obj) => {
        const once = sanitize(obj);
        assert.deepEqual(sanitize(once), once);
        assert.equal('status' in once, false);
        const meta = once.metadata as Record<string, unknown>;
        for (const f of [
          'managedFields',
          'resourceVersion',
          'uid',
          'generation',
          'creationTimestamp',
          'selfLink',
          'deletionTimestamp',
          'deletionGracePeriodSeconds',
          'ownerReferences',
        ]) {
          assert.equal(f in meta, false, f);
        }
        const annotations = meta.annotations as Record<string, unknown> | undefined;
        if (annotations !== undefined) {
          assert.notDeepEqual(Object.keys(annotations), []);
          assert.equal('kubectl.kubernetes.io/last-applied-configuration' in annotations, false);
        }
      }),
    );
  });
});

describe('toYaml: the bytes of an object file', () => {
  it('writes apiVersion, kind, metadata first and name, namespace, labels, annotations first in metadata', () => {
    assert.equal(toYaml(sanitize(LIVE_DEPLOYMENT)), DEPLOYMENT_YAML);
  });

  it('gives identical bytes after a status-only update', () => {
    const updated = structuredClone(LIVE_DEPLOYMENT);
    updated.status = { replicas: 3, conditions: [{ type: 'Progressing', status: 'True' }], readyReplicas: 1 };
    updated.metadata.resourceVersion = '123999';
    updated.metadata.managedFields = [
      { manager: 'kube-controller-manager', operation: 'Update', apiVersion: 'apps/v1' },
    ];
    assert.equal(toYaml(sanitize(updated)), toYaml(sanitize(LIVE_DEPLOYMENT)));
    assert.equal(toYaml(sanitize(updated)), DEPLOYMENT_YAML);
  });

  it('gives identical bytes whatever the order of the status keys', () => {
    fc.assert(
      fc.property(liveObject, jsonObject, (obj, status) => {
        const a = { ...obj, status };
        const b = { ...obj, status: reverseKeys(status) };
        assert.equal(toYaml(sanitize(a)), toYaml(sanitize(b)));
      }),
    );
  });

  it('never folds a long string', () => {
    const long = `${'word '.repeat(100)}end`;
    const out = toYaml({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { long } });
    assert.equal(out, `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  long: ${long}\n`);
  });

  it('quotes strings that a YAML 1.1 or 1.2 reader would take for something else', () => {
    const out = toYaml({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c' },
      data: { a: 'on', b: '0o17', c: '0755', d: 'plain', n: 'x', '<<': 'merge' },
    });
    assert.equal(
      out,
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: "on"\n  b: "0o17"\n  c: "0755"\n  d: plain\n  "n": x\n  "<<": merge\n',
    );
  });

  it("writes characters kubectl's YAML reader would drop or refuse as escapes", () => {
    // go-yaml (sigs.k8s.io/yaml, behind kubectl) reads NEL and U+2028 as line breaks,
    // refuses C1 controls, drops a byte order mark, drops the blanks of a blank-only block
    // scalar and refuses a block scalar that starts with a tab. An indented blank line in
    // a script is fine in a block scalar and stays there.
    const out = toYaml({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c' },
      data: {
        nel: 'x\u0085y',
        ls: 'a\u2028b',
        c1: '\u0080',
        bom: '\ufeffx',
        blank: ' \n',
        tab: '\tx\ny',
        script: 'def f():\n    x = 1\n    \n    return x\n',
      },
    });
    assert.equal(
      out,
      [
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata:',
        '  name: c',
        'data:',
        '  nel: "x\\Ny"',
        '  ls: "a\\Lb"',
        '  c1: "\\x80"',
        '  bom: "\\ufeffx"',
        // `\ ` is YAML's escaped space, so that no reader folds it into the line break.
        '  blank: "\\ \\n"',
        '  tab: "\\tx\\ny"',
        '  script: |',
        '    def f():',
        '        x = 1',
        '        ',
        '        return x',
        '',
      ].join('\n'),
    );
  });

  it('writes a value used twice in full, not as a YAML anchor', () => {
    const labels = { app: 'web' };
    const out = toYaml({
      apiVersion: 'v1',
      kind: 'X',
      metadata: { name: 'a', labels },
      spec: { selector: labels },
    });
    assert.equal(
      out,
      'apiVersion: v1\nkind: X\nmetadata:\n  name: a\n  labels:\n    app: web\nspec:\n  selector:\n    app: web\n',
    );
  });

  it('reads back as the same object in YAML 1.1 and YAML 1.2, and gives the same bytes twice', () => {
    fc.assert(
      fc.property(jsonObject, (obj) => {
        const out = toYaml(obj);
        assert.equal(toYaml(structuredClone(obj)), out);
        assert.deepEqual(parse(out, { version: '1.1' }), obj, out);
        assert.deepEqual(parse(out, { version: '1.2' }), obj, out);
      }),
      { numRuns: 500 },
    );
  });
});
