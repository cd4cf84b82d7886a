import { Re2 } from '../src/re2.ts';
const cases: [string, string][] = [['a+', 'xaaay'], ['(a+)+$', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!'], ['^h.llo$', 'hello'], ['(?i)HÉ', 'hé'], ['\\d{2,3}', 'a12345'], ['a*?', 'aaa'], ['a|ab', 'ab'], ['x*', 'axxb'], ['[[:alpha:]]+', '12ab3'], ['\\p{Greek}+', 'abcαβγ'], ['(?=a)', 'a'], ['a**', 'a'], ['\\1', 'a'], ['[', 'a'], ['(?<=a)b', 'ab'], ['(?P<n>a)', 'a'], ['a{1001}', 'a'], ['\\bfoo\\b', 'a foo b'], ['(?m)^b', 'a\nb'], ['.', '\n'], ['(?s).', '\n'], ['[^a]', 'ab'], ['\\Qa.b\\E', 'xa.b'], ['😀+', 'x😀😀y'], ['', 'abc'], ['(a)(', 'x'], ['a)', 'x'], ['[z-a]', 'x'], ['\\x{41}\\101', 'AA'], ['(?i)k', '\u212a']];
for (const [p, s] of cases) {
  try {
    const re = Re2.compile(p);
    const t = Date.now();
    console.log(JSON.stringify(p), JSON.stringify(s), re.test(s), JSON.stringify(re.find(s)), JSON.stringify(re.findAll(s, -1)), Date.now() - t, 'ms');
  } catch (e) { console.log(JSON.stringify(p), 'ERR', (e as Error).message); }
}
