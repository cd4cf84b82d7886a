import {Environment} from '@marcbachmann/cel-js'
const env = new Environment({enableOptionalTypes: true}).registerVariable('o', 'dyn')
for (const e of process.argv.slice(2)) {
  const c = env.check(e)
  let r
  try { r = env.evaluate(e, {o: {a: 1n, m: {x: null}, l: [1n, 2n]}}) } catch (err) { r = 'ERR ' + err.message.split('\n')[0] }
  console.log(e, '| check:', c.valid ? c.type : 'ERR ' + c.error.message.split('\n')[0], '| eval:', r)
}
