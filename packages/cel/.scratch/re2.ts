import { Re2 } from '../src/re2.ts';
for (const [p, s] of [['(?m)^b', 'a\nb'], ['(?m)b$', 'b\na'], ['(?m:^b)', 'a\nb'], ['^b', 'b'], ['(?m)^', 'b']]) {
  const re = Re2.compile(p as string);
  console.log(p, re.test(s as string), (re as unknown as Record<string, unknown>));
}
