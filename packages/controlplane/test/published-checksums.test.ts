/**
 * The parser of the checksum files releases publish beside their files (dl.k8s.io's
 * `<binary>.sha256`, etcd's `SHA256SUMS`, Prometheus' `sha256sums.txt`, helm's
 * `<file>.sha256sum`). It decides which bytes get installed when no sha256 is pinned, so
 * it takes exactly the format and nothing near it. The property tests build files with
 * their own simple generator (not the code under test); the seed is printed, and
 * `FC_SEED=<n>` replays a run.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseChecksumFile } from '../src/releases.ts';

const seed = Number(process.env.FC_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = 300;

const OURS = 'etcd-v3.6.16-linux-amd64.tar.gz';
const HEX = '0123456789abcdef';
const digest = fc.array(fc.constantFrom(...HEX), { minLength: 64, maxLength: 64 }).map((cs) => cs.join(''));
/** Release file names as these projects write them: never starting with a space or `*`. */
const otherName = fc
  .stringMatching(/^[a-z0-9][a-z0-9._-]{0,40}$/)
  .filter((n) => n !== OURS)
  .map((n) => `${n}.tar.gz`);

/** One line of a well-formed file: digest, `  ` (text) or ` *` (binary marker), name. */
interface Entry {
  readonly sha256: string;
  readonly marker: ' ' | '*';
  readonly name: string;
}
const render = (entries: readonly Entry[], finalNewline: boolean): string =>
  entries.map((e) => `${e.sha256} ${e.marker}${e.name}`).join('\n') + (finalNewline ? '\n' : '');

/** A well-formed sums file with exactly one line for OURS, anywhere, and the digest it must give. */
const wellFormed = fc
  .record({
    ours: digest,
    oursMarker: fc.constantFrom<' ' | '*'>(' ', '*'),
    others: fc.uniqueArray(
      fc.record({ sha256: digest, marker: fc.constantFrom<' ' | '*'>(' ', '*'), name: otherName }),
      { maxLength: 12, selector: (e) => e.name },
    ),
    at: fc.nat(),
    finalNewline: fc.boolean(),
  })
  .map(({ ours, oursMarker, others, at, finalNewline }) => {
    const entries: Entry[] = [...others];
    entries.splice(at % (others.length + 1), 0, { sha256: ours, marker: oursMarker, name: OURS });
    return { entries, finalNewline, expected: ours };
  });

describe('published checksum files', () => {
  it('reads the one line for our file, from files as etcd, Prometheus and helm publish them', () => {
    const a = 'a'.repeat(64);
    const b = 'b'.repeat(64);
    // etcd's SHA256SUMS: `shasum -a 256` over the .tar.gz and .zip files, in ls order.
    const sums = `${b}  etcd-v3.6.16-darwin-arm64.zip\n${a}  ${OURS}\n${b}  etcd-v3.6.16-linux-arm64.tar.gz\n`;
    assert.deepEqual(parseChecksumFile(sums, 'sha256sum-lines', OURS), { kind: 'digest', sha256: a });
    // helm's .sha256sum: one line, for its own file.
    assert.deepEqual(
      parseChecksumFile(
        `${b}  helm-v3.22.0-linux-amd64.tar.gz\n`,
        'sha256sum-lines',
        'helm-v3.22.0-linux-amd64.tar.gz',
      ),
      {
        kind: 'digest',
        sha256: b,
      },
    );
    // dl.k8s.io's kube-apiserver.sha256: the bare digest, with or without a newline.
    assert.deepEqual(parseChecksumFile(a, 'bare-digest', 'kube-apiserver'), { kind: 'digest', sha256: a });
    assert.deepEqual(parseChecksumFile(`${a}\n`, 'bare-digest', 'kube-apiserver'), {
      kind: 'digest',
      sha256: a,
    });
  });

  it('names why a file is malformed: empty, a wrong hex length, two lines for our file, none for it', () => {
    const a = 'a'.repeat(64);
    const cases: [string, 'bare-digest' | 'sha256sum-lines', RegExp][] = [
      ['', 'sha256sum-lines', /the file is empty/],
      ['', 'bare-digest', /the file is empty/],
      [`${'a'.repeat(63)}  ${OURS}\n`, 'sha256sum-lines', /line 1 is not "<sha256> {2}<file name>"/],
      [`${'a'.repeat(65)}\n`, 'bare-digest', /not one sha256/],
      [`${a}  ${OURS}\n${a}  ${OURS}\n`, 'sha256sum-lines', new RegExp(`it has 2 lines for ${OURS}`)],
      [
        `${a}  etcd-v3.6.16-linux-arm64.tar.gz\n`,
        'sha256sum-lines',
        new RegExp(`it has no line for ${OURS}`),
      ],
      [`${a}  kube-apiserver\n`, 'bare-digest', /not one sha256/],
    ];
    for (const [text, format, why] of cases) {
      const r = parseChecksumFile(text, format, OURS);
      assert.equal(r.kind, 'malformed', JSON.stringify(text));
      if (r.kind === 'malformed') assert.match(r.why, why);
    }
  });

  it(`property: any well-formed sums file gives exactly our line's digest`, (t) => {
    t.diagnostic(`fast-check seed ${seed}`);
    fc.assert(
      fc.property(wellFormed, ({ entries, finalNewline, expected }) => {
        assert.deepEqual(parseChecksumFile(render(entries, finalNewline), 'sha256sum-lines', OURS), {
          kind: 'digest',
          sha256: expected,
        });
      }),
      { seed, numRuns: RUNS },
    );
  });

  it(`property: a sums file broken in any one of these ways is never accepted`, (t) => {
    t.diagnostic(`fast-check seed ${seed}`);
    /** Each mutation makes a well-formed file malformed, by construction. */
    const mutations: Record<string, (entries: Entry[], pick: number, d: string) => Entry[] | string> = {
      'our line removed': (es) => es.filter((e) => e.name !== OURS),
      'our line twice (same digest)': (es) => [...es, ...es.filter((e) => e.name === OURS)],
      'our line twice (another digest)': (es, _p, d) => [...es, { sha256: d, marker: ' ', name: OURS }],
      'a digest one digit short': (es, p) =>
        es.map((e, i) => (i === p % es.length ? { ...e, sha256: e.sha256.slice(1) } : e)),
      'a digest one digit long': (es, p) =>
        es.map((e, i) => (i === p % es.length ? { ...e, sha256: `${e.sha256}0` } : e)),
      'an uppercase digit': (es, p) =>
        es.map((e, i) => (i === p % es.length ? { ...e, sha256: `A${e.sha256.slice(1)}` } : e)),
      'a blank line': (es, p) => {
        const lines = render(es, false).split('\n');
        lines.splice(p % (lines.length + 1), 0, '');
        return `${lines.join('\n')}\n`;
      },
      'a one-space separator': (es, p) =>
        render(es, true)
          .split('\n')
          .map((l, i) => (i === p % es.length ? l.replace(/^([0-9a-f]{64}) [ *]/, '$1 ') : l))
          .join('\n'),
      'CRLF line ends': (es) => render(es, true).replace(/\n/g, '\r\n'),
      'nothing but whitespace': () => '\n',
    };
    fc.assert(
      fc.property(
        wellFormed,
        fc.constantFrom(...Object.keys(mutations)),
        fc.nat(),
        digest,
        ({ entries }, which, pick, d) => {
          const mutated = (mutations[which] as (typeof mutations)[string])([...entries], pick, d);
          const text = typeof mutated === 'string' ? mutated : render(mutated, true);
          const r = parseChecksumFile(text, 'sha256sum-lines', OURS);
          assert.equal(r.kind, 'malformed', `${which}: ${JSON.stringify(text)}`);
        },
      ),
      { seed, numRuns: RUNS },
    );
  });

  it(`property: a bare digest file is exactly 64 lowercase hex digits and one optional newline`, (t) => {
    t.diagnostic(`fast-check seed ${seed}`);
    fc.assert(
      fc.property(digest, fc.boolean(), (d, nl) => {
        assert.deepEqual(parseChecksumFile(nl ? `${d}\n` : d, 'bare-digest', 'kubectl'), {
          kind: 'digest',
          sha256: d,
        });
        for (const broken of [
          d.slice(1),
          `${d}0`,
          `A${d.slice(1)}`,
          ` ${d}`,
          `${d}\n\n`,
          `${d}  kubectl`,
          `${d}\r\n`,
        ]) {
          assert.equal(
            parseChecksumFile(broken, 'bare-digest', 'kubectl').kind,
            'malformed',
            JSON.stringify(broken),
          );
        }
      }),
      { seed, numRuns: RUNS },
    );
  });
});
