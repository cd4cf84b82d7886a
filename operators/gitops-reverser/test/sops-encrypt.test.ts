/**
 * A Secret mirrored to Git is a SOPS file that the real `sops` (v3.13.3, built from
 * its Go module) decrypts back to exactly that Secret, and a file the real sops
 * wrote is one the operator reads back; a wrong key or a changed byte is refused;
 * no plaintext value is in the file; and re-encrypting an unchanged Secret is
 * recognised as unchanged although the text differs.
 *
 * Oracles: the Secret the test wrote (compared with what sops prints) and the real
 * sops, both ways. Keys come from the age-encryption package.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { generateHybridIdentity, generateX25519Identity, identityToRecipient } from 'age-encryption';
import fc from 'fast-check';
import {
  compareSecretContent,
  decryptSops,
  encryptSecret,
  isSopsError,
  SopsErrorKind,
  sameSecretContent,
} from '../src/sops/index.ts';
import { runSops, type SopsRun, sopsBinary } from './support/sops-binary.ts';

/** A cold build of sops compiles its whole module graph: minutes on two cores. */
const BUILD_TIMEOUT_MS = 30 * 60_000;
/** Random Secrets through the real sops, one process each. */
const PROPERTY_RUNS = 30;
/** The rule of the mirror's files, given to the real sops when it encrypts. */
const SECRET_REGEX_FLAGS = ['--encrypted-regex', '^(data|stringData)$'];

interface Key {
  readonly identity: string;
  readonly recipient: string;
}

let sops = '';
let alice: Key;
let bob: Key;
let quantum: Key;
let stranger: Key;

async function newKey(generate: () => Promise<string>): Promise<Key> {
  const identity = await generate();
  return { identity, recipient: await identityToRecipient(identity) };
}

before(
  async () => {
    sops = await sopsBinary();
    alice = await newKey(generateX25519Identity);
    bob = await newKey(generateX25519Identity);
    quantum = await newKey(generateHybridIdentity);
    stranger = await newKey(generateX25519Identity);
  },
  { timeout: BUILD_TIMEOUT_MS },
);

const b64 = (bytes: Uint8Array | string): string => Buffer.from(bytes).toString('base64');

/** `sops --decrypt` of a file with one identity, as JSON (unambiguous to read back). */
async function sopsDecrypt(text: string, identity: string): Promise<SopsRun> {
  return runSops(sops, ['--decrypt', '--input-type', 'yaml', '--output-type', 'json', 'secret.enc.yaml'], {
    ageKey: identity,
    files: { 'secret.enc.yaml': text },
  });
}

async function sopsDecryptOk(text: string, identity: string): Promise<unknown> {
  const run = await sopsDecrypt(text, identity);
  assert.equal(run.code, 0, `sops --decrypt failed:\n${run.stderr}\n--- file ---\n${text}`);
  return JSON.parse(run.stdout);
}

/** `sops --encrypt` of a Secret, given to it as JSON so that no YAML typing decides its values. */
async function sopsEncrypt(
  secret: Record<string, unknown>,
  recipient: string,
  flags: readonly string[],
): Promise<string> {
  const run = await runSops(
    sops,
    [
      '--encrypt',
      '--age',
      recipient,
      ...flags,
      '--input-type',
      'json',
      '--output-type',
      'yaml',
      'secret.json',
    ],
    { files: { 'secret.json': JSON.stringify(secret) } },
  );
  assert.equal(run.code, 0, `sops --encrypt failed:\n${run.stderr}`);
  return run.stdout;
}

function secret(
  parts: Record<string, unknown>,
  metadata: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'db-credentials', namespace: 'shop', ...metadata },
    ...parts,
  };
}

const CASES: readonly { readonly name: string; readonly secret: Record<string, unknown> }[] = [
  {
    name: 'data with binary values (every byte, zeros, a key pair)',
    secret: secret({
      data: {
        'all-bytes': b64(Uint8Array.from({ length: 256 }, (_, i) => i)),
        zeros: b64(new Uint8Array(32)),
        'tls.key': b64(randomBytes(1217)),
        'tls.crt': b64(randomBytes(900)),
      },
      type: 'kubernetes.io/tls',
    }),
  },
  {
    name: 'stringData with text YAML would misread or mangle',
    secret: secret({
      stringData: {
        yes: 'yes',
        number: '1_000',
        octal: '0777',
        date: '2024-01-01',
        nul: 'null',
        multiline: 'user: admin\npassword: hunter2\n',
        'no-final-newline': 'a\nb',
        colon: 'a: b',
        hash: '# not a comment',
        quotes: `"double" and 'single'`,
        padded: '  padded  ',
        tab: 'a\tb',
        control: 'bell\u0007 nul\u0000 esc\u001b',
      },
      type: 'Opaque',
    }),
  },
  {
    name: 'data and stringData together',
    secret: secret({
      data: { username: b64('admin'), password: b64('s3cr3t!') },
      stringData: { 'config.yaml': 'url: postgres://db:5432/shop\n' },
      type: 'Opaque',
    }),
  },
  {
    name: 'empty data and an empty value',
    secret: secret({ data: {}, stringData: { empty: '' }, type: 'Opaque' }),
  },
  {
    name: 'no data at all',
    secret: secret({ type: 'Opaque' }),
  },
  {
    name: 'unicode values and unicode plaintext annotations',
    secret: secret(
      {
        data: { greeting: b64('Grüße, 世界 🎉') },
        stringData: {
          greeting: 'Grüße, 世界 🎉',
          rtl: 'שלום \u202e',
          combining: 'e\u0301 a\u0308',
          astral: '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
        },
        type: 'Opaque',
      },
      { annotations: { owner: 'Zoë Ångström', note: '日本語 ✓' } },
    ),
  },
  {
    name: 'long values',
    secret: secret({
      data: { blob: b64(randomBytes(300_000)) },
      stringData: { long: 'x'.repeat(100_000), lines: 'line\n'.repeat(5000) },
      type: 'Opaque',
    }),
  },
  {
    name: 'keys that look like numbers, a label named data, typed metadata and immutable',
    secret: secret(
      {
        data: { '10': b64('ten'), '9': b64('nine'), b: b64('bee') },
        immutable: true,
        type: 'Opaque',
      },
      {
        labels: { data: 'a label named data', '10': '1_000', 'app.kubernetes.io/name': 'shop' },
        annotations: { stringData: 'also encrypted', 'example.com/version': '2.0' },
        generation: 7,
      },
    ),
  },
];

/** Random Secrets: binary data, any text in stringData, plaintext metadata YAML could misread. */
const key = fc.stringMatching(/^[-._a-zA-Z0-9]{1,30}$/).filter((k) => k !== '__proto__');
const plainText = fc.oneof(
  fc.constantFrom(
    'yes',
    'No',
    '1_000',
    '0x1F',
    '2024-01-01',
    'null',
    '~',
    '-',
    '<<',
    ' lead',
    'trail ',
    'a: b',
    '#c',
    '',
  ),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
);
const randomSecrets = fc
  .record(
    {
      apiVersion: fc.constant('v1'),
      kind: fc.constant('Secret'),
      metadata: fc.record(
        {
          name: fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/),
          labels: fc.dictionary(key, plainText, { maxKeys: 4 }),
          annotations: fc.dictionary(key, plainText, { maxKeys: 4 }),
        },
        { requiredKeys: ['name'] },
      ),
      data: fc.dictionary(key, fc.uint8Array({ maxLength: 200 }).map(b64), { maxKeys: 5 }),
      stringData: fc.dictionary(key, fc.string({ unit: 'binary', maxLength: 200 }), { maxKeys: 5 }),
      type: fc.constantFrom('Opaque', 'kubernetes.io/tls', 'kubernetes.io/dockerconfigjson'),
    },
    { requiredKeys: ['apiVersion', 'kind', 'metadata'] },
  )
  .map((x) => JSON.parse(JSON.stringify(x)) as Record<string, unknown>); // plain prototypes, as JSON.parse gives

describe('sops --decrypt reads our files back', () => {
  for (const c of CASES) {
    it(`gives back exactly the Secret: ${c.name}`, async () => {
      const text = await encryptSecret(c.secret, { recipients: [alice.recipient] });
      const back = await sopsDecryptOk(text, alice.identity);
      assert.deepEqual(back, c.secret);
      assert.deepEqual(
        Object.keys(back as object),
        Object.keys(c.secret),
        'the document keeps its key order',
      );
    });
  }

  // Found by the property below (seed 568711758): DEL in an annotation made a file go-yaml
  // refused. Not in CASES: real sops writes U+2028 in a form our reader misreads (left open).
  it('gives back plaintext annotations with characters go-yaml cannot read raw (DEL, C1 controls, NEL, U+2028, U+FFFE)', async () => {
    const s = secret(
      { stringData: { v: 'x' }, type: 'Opaque' },
      {
        annotations: {
          del: '\u007f',
          c1: 'a\u0080b\u009f',
          nel: 'one\u0085two',
          'line-separator': 'one\u2028two\u2029three',
          noncharacter: '\ufffe\uffff',
          multiline: 'first\nsecond\u007f',
        },
      },
    );
    const text = await encryptSecret(s, { recipients: [alice.recipient] });
    assert.deepEqual(await sopsDecryptOk(text, alice.identity), s);
  });

  it('gives back random Secrets (property)', async () => {
    await fc.assert(
      fc.asyncProperty(randomSecrets, async (s) => {
        const text = await encryptSecret(s, { recipients: [alice.recipient] });
        assert.deepEqual(await sopsDecryptOk(text, alice.identity), s);
      }),
      { numRuns: PROPERTY_RUNS },
    );
  });

  it('lets each recipient decrypt alone, post-quantum ones included', async () => {
    const s = CASES[2]?.secret ?? {};
    const text = await encryptSecret(s, { recipients: [alice.recipient, bob.recipient, quantum.recipient] });
    for (const k of [alice, bob, quantum]) assert.deepEqual(await sopsDecryptOk(text, k.identity), s);
  });

  it('writes the lastmodified it is given, and sops accepts the MAC bound to it', async () => {
    const s = CASES[2]?.secret ?? {};
    const text = await encryptSecret(s, {
      recipients: [alice.recipient],
      now: new Date('2025-01-02T03:04:05.678Z'),
    });
    assert.match(text, /^ {4}lastmodified: "2025-01-02T03:04:05Z"$/m);
    assert.deepEqual(await sopsDecryptOk(text, alice.identity), s);
  });
});

describe('our decryption reads files the real sops wrote', () => {
  for (const c of CASES) {
    it(`reads a Secret sops encrypted with the mirror's rule: ${c.name}`, async () => {
      const text = await sopsEncrypt(c.secret, alice.recipient, SECRET_REGEX_FLAGS);
      assert.deepEqual(await decryptSops(text, [alice.identity]), c.secret);
    });
  }

  const RULES: readonly { readonly name: string; readonly flags: readonly string[] }[] = [
    { name: 'sops’ default (everything encrypted)', flags: [] },
    { name: 'an unencrypted regex', flags: ['--unencrypted-regex', '^(apiVersion|kind|metadata|type)$'] },
    { name: 'a MAC over encrypted values only', flags: [...SECRET_REGEX_FLAGS, '--mac-only-encrypted'] },
  ];
  for (const r of RULES) {
    it(`reads a Secret sops encrypted with ${r.name}`, async () => {
      const s = CASES[7]?.secret ?? {};
      const text = await sopsEncrypt(s, alice.recipient, r.flags);
      assert.deepEqual(await decryptSops(text, [alice.identity]), s);
    });
  }

  it('reads random Secrets sops encrypted (property)', async () => {
    await fc.assert(
      fc.asyncProperty(randomSecrets, async (s) => {
        const text = await sopsEncrypt(s, alice.recipient, SECRET_REGEX_FLAGS);
        assert.deepEqual(await decryptSops(text, [alice.identity]), s);
      }),
      { numRuns: PROPERTY_RUNS },
    );
  });

  it('reads a file sops encrypted for several recipients with any one identity', async () => {
    const s = CASES[2]?.secret ?? {};
    const text = await sopsEncrypt(s, `${alice.recipient},${quantum.recipient}`, SECRET_REGEX_FLAGS);
    assert.deepEqual(await decryptSops(text, [quantum.identity]), s);
    assert.deepEqual(await decryptSops(text, [stranger.identity, alice.identity]), s);
  });
});

async function assertSopsError(p: Promise<unknown>, kind: SopsErrorKind, pattern?: RegExp): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(isSopsError(err, kind), `expected a SopsError of kind ${kind}, got ${String(err)}`);
    if (pattern) assert.match(err.message, pattern);
    return true;
  });
}

describe('a wrong key or a changed file is refused', () => {
  const s = secret(
    { data: { password: b64('correct horse'), username: b64('admin') }, type: 'Opaque' },
    { labels: { team: 'blue' } },
  );
  let text = '';
  before(async () => {
    text = await encryptSecret(s, { recipients: [alice.recipient] });
  });

  /** The file with one line's text replaced; fails if the line is not there. */
  function edit(from: RegExp, to: (m: RegExpExecArray) => string): string {
    const m = from.exec(text);
    assert.ok(m, `the file has no line matching ${from}`);
    return text.slice(0, m.index) + to(m) + text.slice(m.index + m[0].length);
  }

  it('refuses an identity that is not a recipient, as sops does', async () => {
    await assertSopsError(decryptSops(text, [stranger.identity]), SopsErrorKind.NoMatchingIdentity);
    assert.notEqual((await sopsDecrypt(text, stranger.identity)).code, 0);
  });

  it('refuses a changed ciphertext byte, as sops does', async () => {
    const tampered = edit(
      /(password: ENC\[AES256_GCM,data:)(.)/,
      (m) => `${m[1]}${m[2] === 'A' ? 'B' : 'A'}`,
    );
    await assertSopsError(decryptSops(tampered, [alice.identity]), SopsErrorKind.Tampered);
    assert.notEqual((await sopsDecrypt(tampered, alice.identity)).code, 0);
  });

  it('refuses ciphertexts swapped between keys (each is bound to its key)', async () => {
    const pw = /password: (ENC\[[^\]]+\])/.exec(text)?.[1] ?? '';
    const user = /username: (ENC\[[^\]]+\])/.exec(text)?.[1] ?? '';
    const swapped = text.replace(pw, '@PW@').replace(user, pw).replace('@PW@', user);
    await assertSopsError(decryptSops(swapped, [alice.identity]), SopsErrorKind.Tampered);
    assert.notEqual((await sopsDecrypt(swapped, alice.identity)).code, 0);
  });

  it('refuses a changed plaintext field by its MAC, as sops does', async () => {
    const tampered = edit(/team: blue/, () => 'team: red');
    await assertSopsError(decryptSops(tampered, [alice.identity]), SopsErrorKind.Tampered, /MAC mismatch/);
    const run = await sopsDecrypt(tampered, alice.identity);
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /MAC mismatch/);
  });

  it('refuses a removed value by its MAC, as sops does', async () => {
    const tampered = edit(/^ {4}username: ENC\[[^\]]+\]\n/m, () => '');
    await assertSopsError(decryptSops(tampered, [alice.identity]), SopsErrorKind.Tampered, /MAC mismatch/);
    assert.match((await sopsDecrypt(tampered, alice.identity)).stderr, /MAC mismatch/);
  });

  it('refuses a changed lastmodified (the MAC is bound to it), as sops does', async () => {
    const tampered = edit(/lastmodified: "(\d{4})/, (m) => `lastmodified: "${Number(m[1]) - 1}`);
    await assertSopsError(decryptSops(tampered, [alice.identity]), SopsErrorKind.Tampered);
    assert.notEqual((await sopsDecrypt(tampered, alice.identity)).code, 0);
  });

  it('refuses text that is not a SOPS file', async () => {
    await assertSopsError(
      decryptSops('apiVersion: v1\nkind: Secret\n', [alice.identity]),
      SopsErrorKind.Malformed,
    );
    await assertSopsError(decryptSops('a: [unclosed\n', [alice.identity]), SopsErrorKind.Malformed);
  });

  it('refuses to encrypt a Secret with a top-level sops key, which sops reserves', async () => {
    await assertSopsError(
      encryptSecret({ ...s, sops: { x: 1 } }, { recipients: [alice.recipient] }),
      SopsErrorKind.Malformed,
      /reserves/,
    );
  });
});

describe('the file in Git never shows a secret value', () => {
  it('holds neither the values nor their decoded text', async () => {
    const marker = (): string => randomBytes(12).toString('hex');
    const data = { token: b64(`tok-${marker()}`), 'ca.crt': b64(`-----BEGIN-${marker()}`) };
    const stringData = {
      password: `pw-${marker()}`,
      'config.ini': `[db]\nuser=admin-${marker()}\npass=${marker()}\n`,
    };
    const text = await encryptSecret(secret({ data, stringData, type: 'Opaque' }), {
      recipients: [alice.recipient, bob.recipient],
    });
    const needles = [
      ...Object.values(data).flatMap((v) => [v, Buffer.from(v, 'base64').toString('utf8')]),
      ...Object.values(stringData).flatMap((v) => [v, b64(v), ...v.split('\n').filter((l) => l.length >= 8)]),
    ];
    for (const needle of needles)
      assert.ok(!text.includes(needle), `the file contains ${JSON.stringify(needle)}`);
    // The keys stay readable, so a reviewer sees what changed.
    for (const k of [...Object.keys(data), ...Object.keys(stringData)])
      assert.ok(text.includes(`${k}: ENC[`), k);
  });
});

describe('an unchanged Secret is recognised although every encryption differs', () => {
  const s = secret(
    {
      data: { password: b64('correct horse'), '10': b64('ten') },
      stringData: { note: 'kept' },
      type: 'Opaque',
    },
    { labels: { team: 'blue' }, generation: 2 },
  );

  it('encrypts the same Secret to different texts, both the same content', async () => {
    const a = await encryptSecret(s, { recipients: [alice.recipient] });
    const b = await encryptSecret(s, { recipients: [alice.recipient] });
    assert.notEqual(a, b);
    assert.notEqual(/password: (ENC\[[^\]]+\])/.exec(a)?.[1], /password: (ENC\[[^\]]+\])/.exec(b)?.[1]);
    assert.equal(await sameSecretContent(a, s, [alice.identity]), true);
    assert.equal(await sameSecretContent(b, s, [alice.identity]), true);
  });

  it('ignores key order: a Secret listed in another order is the same', async () => {
    const a = await encryptSecret(s, { recipients: [alice.recipient] });
    const reordered = Object.fromEntries(Object.entries(s).reverse());
    assert.equal(await sameSecretContent(a, reordered, [alice.identity]), true);
  });

  it('sees a changed value, a changed label, an added and a removed key', async () => {
    const a = await encryptSecret(s, { recipients: [alice.recipient] });
    const changes: Record<string, unknown>[] = [
      { ...s, data: { password: b64('wrong horse'), '10': b64('ten') } },
      {
        ...s,
        metadata: { name: 'db-credentials', namespace: 'shop', labels: { team: 'red' }, generation: 2 },
      },
      { ...s, stringData: { note: 'kept', extra: 'x' } },
      { ...s, stringData: {} },
      { ...s, type: 'kubernetes.io/tls' },
    ];
    for (const changed of changes) {
      assert.deepEqual(await compareSecretContent(a, changed, [alice.identity]), { kind: 'changed' });
    }
  });

  it('says recipients changed when the file is for another set of keys, whatever their order', async () => {
    const a = await encryptSecret(s, { recipients: [alice.recipient, bob.recipient] });
    assert.deepEqual(
      await compareSecretContent(a, s, [alice.identity], { recipients: [bob.recipient, alice.recipient] }),
      {
        kind: 'same',
      },
    );
    assert.deepEqual(await compareSecretContent(a, s, [alice.identity], { recipients: [alice.recipient] }), {
      kind: 'recipients-changed',
      fileRecipients: [alice.recipient, bob.recipient],
    });
  });

  it('counts a file it cannot read as not the same, so that it is rewritten', async () => {
    const a = await encryptSecret(s, { recipients: [alice.recipient] });
    const result = await compareSecretContent(a, s, [stranger.identity]);
    assert.equal(result.kind, 'unreadable');
    assert.equal(result.kind === 'unreadable' && result.error.kind, SopsErrorKind.NoMatchingIdentity);
    assert.equal(await sameSecretContent(a.replace('team: blue', 'team: red'), s, [alice.identity]), false);
  });

  it('recognises the same Secret in a file the real sops wrote', async () => {
    const text = await sopsEncrypt(s, alice.recipient, SECRET_REGEX_FLAGS);
    assert.equal(await sameSecretContent(text, s, [alice.identity]), true);
  });
});
