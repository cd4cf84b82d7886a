/**
 * CEL benchmark (`node bench/cel.bench.ts`): compile time per expression, and
 * evaluations per second of RFC 0002's `safe` expression through @operators/cel versus
 * the bare @marcbachmann/cel-js in the same run, with the ratio (target: <= 1.5).
 *
 * Both evaluate the same pre-converted target (integers as BigInt, as the apiserver sees
 * them); conversion from JSON text is measured separately, since a controller converts
 * an object once and evaluates several expressions on it.
 */
import { Environment } from '@marcbachmann/cel-js';
import { CelEnvironment, parseJson } from '../packages/cel/src/index.ts';

const SAFE =
  'target.spec.state == "Locked" && has(target.status) && target.status.observedGeneration == target.metadata.generation && target.status.conditions.exists(c, c.type == "Ready" && c.status == "True")';

const EXPRESSIONS = [
  SAFE,
  'source.metadata.name',
  'source.spec.isActive ? "Active" : "Locked"',
  "!has(target.metadata.annotations) || target.metadata.annotations.all(k, !k.startsWith('link.weebo.io/') || (k.substring(14) in ['stalwart'] && target.metadata.annotations[k] == 'enabled'))",
  "(has(target.metadata.labels) ? target.metadata.labels.filter(k, k.startsWith('link.weebo.io/')).map(k, 'l:' + k + '=' + target.metadata.labels[k]) : [])",
  'source.spec.username.matches("^[a-z][a-z0-9-]*$") && size(source.spec.username) <= 63',
];

const TARGET_JSON =
  '{"apiVersion":"stalwart.weebo.io/v1alpha1","kind":"StalwartAccount","metadata":{"name":"alice","namespace":"mail","generation":3,"labels":{"link.weebo.io/link":"a"},"annotations":{"link.weebo.io/source-uid":"u"}},"spec":{"name":"alice","state":"Locked"},"status":{"observedGeneration":3,"conditions":[{"type":"Synced","status":"True"},{"type":"Ready","status":"True"}]}}';

function perSecond(fn: () => unknown, ms: number): number {
  let n = 0;
  const end = performance.now() + ms;
  while (performance.now() < end) {
    for (let i = 0; i < 1000; i++) fn();
    n += 1000;
  }
  return (n * 1000) / ms;
}

function best(fn: () => number, rounds: number): number {
  let b = 0;
  for (let i = 0; i < rounds; i++) b = Math.max(b, fn());
  return b;
}

const parsed = parseJson(TARGET_JSON);
if (!parsed.ok) throw new Error(parsed.error.message);
const target = parsed.value;

// Compile time.
const ours = new CelEnvironment({ variables: { target: 'dyn', source: 'dyn' } });
const bare = new Environment().registerVariable('target', 'dyn').registerVariable('source', 'dyn');
const compileRounds = 2000;
let t = performance.now();
for (let i = 0; i < compileRounds; i++)
  for (const e of EXPRESSIONS) if (!ours.compile(e).ok) throw new Error(e);
const oursCompileUs = ((performance.now() - t) * 1000) / (compileRounds * EXPRESSIONS.length);
t = performance.now();
for (let i = 0; i < compileRounds; i++) for (const e of EXPRESSIONS) bare.parse(e).check();
const bareCompileUs = ((performance.now() - t) * 1000) / (compileRounds * EXPRESSIONS.length);

// Evaluations per second of `safe`.
const program = ours.compile(SAFE);
if (!program.ok) throw new Error(program.error.message);
const bareSafe = bare.parse(SAFE);
bareSafe.check();
const vars = { target };
const check = program.value.evaluateBool(vars);
if (!check.ok || check.value !== true || bareSafe(vars) !== true)
  throw new Error('safe must be true on the fixture');

// Warm up both, then alternate rounds so that neither gets the machine's better moments.
perSecond(() => program.value.evaluateBool(vars), 300);
perSecond(() => bareSafe(vars), 300);
let oursRate = 0;
let bareRate = 0;
for (let round = 0; round < 3; round++) {
  oursRate = Math.max(
    oursRate,
    best(() => perSecond(() => program.value.evaluateBool(vars), 700), 1),
  );
  bareRate = Math.max(
    bareRate,
    best(() => perSecond(() => bareSafe(vars), 700), 1),
  );
}
const conversionRate = perSecond(() => parseJson(TARGET_JSON), 500);

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
process.stdout.write(`CEL benchmark (node ${process.version})\n`);
process.stdout.write(`compile (parse + type check), mean of ${EXPRESSIONS.length} expressions:\n`);
process.stdout.write(`  @operators/cel        ${oursCompileUs.toFixed(1)} µs/expression\n`);
process.stdout.write(`  @marcbachmann/cel-js  ${bareCompileUs.toFixed(1)} µs/expression\n`);
process.stdout.write(`RFC 0002 safe expression, evaluations per second (best of 3 rounds):\n`);
process.stdout.write(`  @operators/cel        ${fmt(oursRate)} /s (evaluateBool, with cost budget)\n`);
process.stdout.write(`  @marcbachmann/cel-js  ${fmt(bareRate)} /s\n`);
process.stdout.write(`  ratio bare/ours       ${(bareRate / oursRate).toFixed(2)} (target <= 1.5)\n`);
process.stdout.write(`JSON text -> CEL values (parseJson of the target): ${fmt(conversionRate)} /s\n`);
