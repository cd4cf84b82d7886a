/**
 * Differential conformance: every expression of the corpus is evaluated by our evaluator
 * and by a real kube-apiserver 1.36 on the same JSON, and the outcomes must match: the
 * same value (type included), or an error on both sides.
 *
 * How the apiserver is asked, in three steps and one policy:
 *   1. Compile: a dry-run ValidatingAdmissionPolicy carries each expression as a policy
 *      variable; the apiserver rejects it with one cause per expression that does not
 *      compile, which tells us which ones are compile errors there.
 *   2. Evaluate: the policy is created for real, with the compiling expressions as
 *      variables. Validation i fails only for the probe object whose `spec.probe` is i,
 *      and its messageExpression reports, from inside the apiserver, whether variable i
 *      equals the value our evaluator computed (see oracle.ts), or describes it. If the
 *      variable errors, the messageExpression errors and the static message "R<i>:error"
 *      is used instead.
 *   3. Probe: one dry-run create per expression, the fixture's JSON text sent as is under
 *      `spec.vars`; the denial message carries the verdict.
 * Variables of a fixture (`o`, `source`, `object`...) are written `object.spec.vars.<name>`
 * on the apiserver side; the expression is otherwise the same text.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEnv } from '@operators/controlplane/testing';
import { isApiError, type KubeObject } from '@operators/kit';
import { CelEnvironment, type CelValue, parseJson } from '../src/index.ts';
import { CORPUS, FIXTURES, KNOWN_DIFFERENCES } from './corpus.ts';
import { celCheck, celDescribe } from './oracle.ts';

const GROUP = 'conformance.cel.operators.test';
const PLURAL = 'celprobes';
const PROBE_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${PLURAL}.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { plural: PLURAL, singular: 'celprobe', kind: 'CelProbe', listKind: 'CelProbeList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          },
        },
      },
    ],
  },
};

interface Case {
  readonly id: number;
  readonly fixture: string;
  readonly expr: string;
  readonly key: string;
}

type Ours =
  | { readonly kind: 'value'; readonly value: CelValue }
  | { readonly kind: 'error'; readonly message: string };

type Theirs =
  | { readonly kind: 'compile-error'; readonly message: string }
  | { readonly kind: 'error' }
  | { readonly kind: 'same' }
  | { readonly kind: 'value'; readonly description: string };

/** Rewrites references to the fixture's variables into `object.spec.vars.<name>`, leaving strings and members alone. */
export function substitute(expr: string, names: ReadonlySet<string>): string {
  let out = '';
  let i = 0;
  let prevSignificant = '';
  while (i < expr.length) {
    const ch = expr[i] as string;
    const strMatch = /^[rRbB]{0,2}('''|"""|'|")/.exec(expr.slice(i));
    if (strMatch && (i === 0 || !/[A-Za-z0-9_]/.test(expr[i - 1] as string))) {
      const quote = strMatch[1] as string;
      const raw = /[rR]/.test(strMatch[0].slice(0, -quote.length));
      let j = i + strMatch[0].length;
      while (j < expr.length && !expr.startsWith(quote, j)) j += !raw && expr[j] === '\\' ? 2 : 1;
      j += quote.length;
      out += expr.slice(i, j);
      prevSignificant = quote;
      i = j;
      continue;
    }
    const id = /^[A-Za-z_][A-Za-z0-9_]*/.exec(expr.slice(i));
    if (id) {
      const name = id[0];
      out += prevSignificant !== '.' && names.has(name) ? `object.spec.vars.${name}` : name;
      prevSignificant = 'id';
      i += name.length;
      continue;
    }
    out += ch;
    if (!/\s/.test(ch)) prevSignificant = ch;
    i++;
  }
  return out;
}

function cases(): Case[] {
  const out: Case[] = [];
  for (const group of CORPUS) {
    for (const fixture of group.fixtures) {
      for (const expr of group.exprs)
        out.push({ id: out.length, fixture, expr, key: `${fixture} :: ${expr}` });
    }
  }
  return out;
}

function fixtureValues(name: string): Record<string, CelValue> {
  const f = FIXTURES[name];
  assert.ok(f, `fixture ${name} exists`);
  const parsed = parseJson(f.json);
  assert.ok(parsed.ok, `fixture ${name} is valid JSON`);
  return parsed.value as Record<string, CelValue>;
}

function ours(c: Case): Ours {
  const vars = fixtureValues(c.fixture);
  const env = new CelEnvironment({ variables: Object.fromEntries(Object.keys(vars).map((k) => [k, 'dyn'])) });
  const compiled = env.compile(c.expr);
  if (!compiled.ok) return { kind: 'error', message: `compile: ${compiled.error.message}` };
  const r = compiled.value.evaluate(vars);
  return r.ok ? { kind: 'value', value: r.value } : { kind: 'error', message: r.error.message };
}

function policy(
  name: string,
  variables: { name: string; expression: string }[],
  validations: object[],
): KubeObject {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          { apiGroups: [GROUP], apiVersions: ['*'], resources: [PLURAL], operations: ['CREATE'] },
        ],
      },
      variables,
      validations,
    },
  } as unknown as KubeObject;
}

async function pool<T>(items: readonly T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

test('our evaluator agrees with kube-apiserver 1.36 on the conformance corpus', async (t) => {
  const env = await testEnv();
  const ns = await env.namespace(t, 'cel-conformance');
  await env.installCrds([PROBE_CRD as unknown as KubeObject]);
  const all = cases();
  assert.ok(all.length >= 200, `the corpus has at least 200 cases (${all.length})`);
  const ourOutcomes = new Map(all.map((c) => [c.id, ours(c)]));

  const exprOf = (c: Case): string => substitute(c.expr, new Set(Object.keys(fixtureValues(c.fixture))));
  const varName = (c: Case): string => `e${c.id}`;

  // 1. Which expressions compile in the apiserver.
  const theirs = new Map<number, Theirs>();
  const policyName = `cel-conformance-${process.pid}`;
  try {
    await env.admin.create(
      policy(
        policyName,
        all.map((c) => ({ name: varName(c), expression: exprOf(c) })),
        [{ expression: 'true' }],
      ),
      {
        dryRun: true,
      },
    );
  } catch (err) {
    if (!isApiError(err)) throw err;
    for (const cause of err.causes) {
      const m = /^spec\.variables\[(\d+)\]\.expression$/.exec(cause.field ?? '');
      assert.ok(m, `only variables fail to compile: ${cause.field}: ${cause.message}`);
      theirs.set(Number(m[1]), {
        kind: 'compile-error',
        message: (cause.message ?? '').split('\n')[0] ?? '',
      });
    }
  }
  const compiling = all.filter((c) => !theirs.has(c.id));

  // 2. The policy that reports, for probe i, how variable i compares with our outcome.
  const validations = compiling.map((c) => {
    const x = `dyn(variables.${varName(c)})`;
    const o = ourOutcomes.get(c.id) as Ours;
    const check = o.kind === 'value' ? celCheck(x, o.value) : undefined;
    const verdict = check
      ? `(${check} ? 'same' : 'value ' + (${celDescribe(x)}))`
      : `'value ' + (${celDescribe(x)})`;
    return {
      expression: `object.spec.probe != ${c.id}`,
      message: `R${c.id}:error`,
      messageExpression: `'R${c.id}:' + ${verdict}`,
    };
  });
  validations.push({
    expression: 'object.spec.probe != -1',
    message: 'R-1:ready',
    messageExpression: "'R-1:ready'",
  });
  const variables = compiling.map((c) => ({ name: varName(c), expression: exprOf(c) }));
  await env.admin.create(policy(policyName, variables, validations));
  t.after(() =>
    env.admin.delete(
      { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy' },
      policyName,
    ),
  );
  await env.admin.create({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: policyName },
    spec: { policyName, validationActions: ['Deny'] },
  } as unknown as KubeObject);
  t.after(() =>
    env.admin.delete(
      { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding' },
      policyName,
    ),
  );

  const probe = async (id: number, varsJson: string): Promise<string> => {
    const body = `{"apiVersion":"${GROUP}/v1","kind":"CelProbe","metadata":{"name":"p${id === -1 ? 'ready' : id}"},"spec":{"probe":${id},"vars":${varsJson}}}`;
    try {
      await env.admin.transport.request({
        method: 'POST',
        path: `/apis/${GROUP}/v1/namespaces/${ns}/${PLURAL}`,
        query: { dryRun: 'All' },
        body,
      });
      return 'admitted';
    } catch (err) {
      if (!isApiError(err)) throw err;
      const m = new RegExp(`R${id}:(.*)$`, 's').exec(err.message);
      return m ? (m[1] as string) : `unexpected: ${err.message}`;
    }
  };

  // The policy takes effect asynchronously.
  const deadline = Date.now() + 30_000;
  while ((await probe(-1, '{}')) !== 'ready') {
    assert.ok(Date.now() < deadline, 'the conformance policy took effect within 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }

  // 3. One probe per compiling expression.
  await pool(compiling, 8, async (c) => {
    const text = await probe(c.id, (FIXTURES[c.fixture] as { json: string }).json);
    if (text === 'error') theirs.set(c.id, { kind: 'error' });
    else if (text === 'same') theirs.set(c.id, { kind: 'same' });
    else if (text.startsWith('value ')) theirs.set(c.id, { kind: 'value', description: text.slice(6) });
    else assert.fail(`probe ${c.id} (${c.key}) answered ${text}`);
  });

  // 4. Compare.
  const mismatches: { c: Case; ours: string; theirs: string }[] = [];
  for (const c of all) {
    const o = ourOutcomes.get(c.id) as Ours;
    const s = theirs.get(c.id) as Theirs;
    const match = o.kind === 'value' ? s.kind === 'same' : s.kind === 'error' || s.kind === 'compile-error';
    if (match) continue;
    mismatches.push({
      c,
      ours: o.kind === 'value' ? `value ${String(o.value)}` : `error: ${o.message}`,
      theirs:
        s.kind === 'value'
          ? `value ${s.description}`
          : s.kind === 'compile-error'
            ? `compile error: ${s.message}`
            : s.kind,
    });
  }
  const matched = all.length - mismatches.length;
  const rate = ((100 * matched) / all.length).toFixed(1);
  t.diagnostic(`conformance: ${matched}/${all.length} cases match the apiserver (${rate} %)`);
  for (const m of mismatches) {
    t.diagnostic(`mismatch ${m.c.key}\n    ours:   ${m.ours}\n    theirs: ${m.theirs}`);
  }
  const unexpected = mismatches.filter((m) => !(m.c.key in KNOWN_DIFFERENCES)).map((m) => m.c.key);
  const stale = Object.keys(KNOWN_DIFFERENCES).filter((k) => !mismatches.some((m) => m.c.key === k));
  assert.deepEqual(
    unexpected,
    [],
    'every mismatch is a known difference listed in corpus.ts and docs/cel.md',
  );
  assert.deepEqual(stale, [], 'every listed known difference still differs');
});
