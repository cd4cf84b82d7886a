import { CelEnvironment, parseJson, formatCelError } from '../src/index.ts';
const env = new CelEnvironment({ variables: { o: 'dyn' } });
const o = parseJson('{"n": 3, "f": 2.0, "s": "héllo😀", "l": [3,1,2], "m": {"a": 1, "b": null}, "e": []}');
if (!o.ok) throw new Error('bad');
for (const e of process.argv.slice(2)) {
  const p = env.compile(e);
  if (!p.ok) { console.log(e, '=> COMPILE', p.error.kind, formatCelError(p.error)); continue; }
  const r = p.value.evaluate({ o: o.value });
  console.log(e, ':', p.value.outputType, '=>', r.ok ? r.value : `ERR ${r.error.kind} ${formatCelError(r.error)}`);
}
