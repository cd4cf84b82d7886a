/**
 * The Dockerfiles in `images/` (for users who build with Docker or Buildah) against the
 * daemonless recipe (`npm run images`): for every image of the catalog, the same
 * sources, dependency manifests, pinned Node, extra packages, entrypoint, user, working
 * directory, environment and labels, in the recipe's layer order. The expected values
 * come from the recipe's own exports and the repository's files; nothing here runs
 * Docker or reaches a network. Then the small Dockerfile reader the check rests on, with
 * fixed inputs and properties.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { before, describe, it } from 'node:test';
import fc from 'fast-check';
import { appPaths, dependencyManifests, NODE_PATH } from '../src/app.ts';
import { IMAGE_ENV } from '../src/build.ts';
import { APP_DIR, IMAGE_USER, IMAGES, type ImageSpec } from '../src/catalog.ts';
import {
  copyPaths,
  type Dockerfile,
  type Instruction,
  keyValues,
  parseDockerfile,
  parseInstructions,
  type Stage,
  shellWords,
} from '../src/dockerfile.ts';

const repo = join(import.meta.dirname, '..', '..', '..');
const imagesDir = join(repo, 'images');

/** The official Node images (docker-library) at an exact version on a Debian suite: `node:24.21.0-bookworm-slim`. */
const NODE_IMAGE = /^(?:docker\.io\/)?(?:library\/)?node:(\d+\.\d+\.\d+)-([a-z]+)-slim$/;
/** Where the official Node images hold the binary. */
const NODE_IMAGE_BINARY = '/usr/local/bin/node';
/** The distroless image holding glibc, libgcc and libstdc++, as the recipe's base does, as its nonroot user. */
const DISTROLESS_CC = /^gcr\.io\/distroless\/cc-debian(\d+):nonroot$/;
/** Debian's releases by codename. */
const DEBIAN_RELEASES: Readonly<Record<string, string>> = { bookworm: '12', trixie: '13', forky: '14' };

/** What the daemonless recipe puts in `spec`'s image, from its own exports and the repository. */
interface Recipe {
  readonly spec: ImageSpec;
  readonly sources: readonly string[];
  readonly manifests: readonly string[];
  readonly nodeVersion: string;
  readonly license: string;
}

async function recipeOf(spec: ImageSpec): Promise<Recipe> {
  const root = JSON.parse(await readFile(join(repo, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>;
    license: string;
  };
  return {
    spec,
    sources: await appPaths(repo, spec),
    manifests: await dependencyManifests(repo),
    nodeVersion: root.devDependencies.node!,
    license: root.license,
  };
}

function dockerfileName(spec: ImageSpec): string {
  return `${spec.name}.Dockerfile`;
}

/** One file copied by a COPY: the stage (or undefined: the build context) it comes from, and where it lands. */
interface Copied {
  readonly from: string | undefined;
  readonly source: string;
  readonly dest: string;
}

/** The absolute working directory after `stage`'s instructions up to `until` (all by default). */
function workdirOf(stage: Stage, until = stage.instructions.length): string {
  let dir = '/';
  for (const ins of stage.instructions.slice(0, until)) {
    if (ins.keyword === 'WORKDIR') dir = posix.resolve(dir, ins.args);
  }
  return dir;
}

/** Every file `stage` copies, in order, with its destination made absolute as Docker does. */
function copiesOf(stage: Stage): Copied[] {
  const out: Copied[] = [];
  for (const [i, ins] of stage.instructions.entries()) {
    assert.notEqual(ins.keyword, 'ADD', `line ${ins.line}: ADD fetches and unpacks; the recipe only copies`);
    if (ins.keyword !== 'COPY') continue;
    const { sources, dest } = copyPaths(ins);
    const abs = posix.resolve(workdirOf(stage, i), dest);
    const intoDir = dest.endsWith('/') || sources.length > 1;
    for (const source of sources) {
      out.push({
        from: ins.flags.from,
        source,
        dest: intoDir ? posix.join(abs, posix.basename(source)) : abs,
      });
    }
  }
  return out;
}

/** The destination as written of the COPY whose source is `source`. */
function copyDestOf(stage: Stage, source: string): string | undefined {
  for (const ins of stage.instructions) {
    if (ins.keyword !== 'COPY') continue;
    const { sources, dest } = copyPaths(ins);
    if (sources.includes(source)) return dest;
  }
  return undefined;
}

function only(stage: Stage, keyword: string, file: string): Instruction {
  const found = stage.instructions.filter((i) => i.keyword === keyword);
  assert.equal(found.length, 1, `${file}: the final stage has ${found.length} ${keyword}, expected one`);
  return found[0]!;
}

function pairsOf(stage: Stage, keyword: 'ENV' | 'LABEL'): Record<string, string> {
  return Object.fromEntries(stage.instructions.filter((i) => i.keyword === keyword).flatMap(keyValues));
}

/** The packages `apt-get install` names in `stage`'s RUNs. */
function aptInstalled(stage: Stage): string[] {
  return aptPackages(stage, 'install');
}

/**
 * The packages `apt-get download` fetches: the recipe's own way (`dpkg-deb -x` of each,
 * no dependency resolved), for packages whose files are many (git), copied whole.
 */
function aptDownloaded(stage: Stage): string[] {
  return aptPackages(stage, 'download');
}

function aptPackages(stage: Stage, verb: 'install' | 'download'): string[] {
  const out: string[] = [];
  for (const run of stage.instructions.filter((i) => i.keyword === 'RUN')) {
    for (const command of run.args.split(/&&|\|\||;/)) {
      const words = command.trim().split(/\s+/);
      if (words[0] === 'apt-get' && words.includes(verb)) {
        out.push(...words.slice(words.indexOf(verb) + 1).filter((w) => !w.startsWith('-')));
      }
    }
  }
  return out.sort();
}

/** Where a Dockerfile extracts downloaded packages in the Node stage, copied to `/` of the final one. */
const EXTRACTED = '/extra';

/** The stage `FROM` the official Node image, which the final stage takes Node and the dependencies from. */
function nodeStage(df: Dockerfile, file: string): Stage & { name: string } {
  const stages = df.stages.filter((s) => NODE_IMAGE.test(s.from));
  assert.equal(stages.length, 1, `${file}: expected one stage FROM node:<version>-<suite>-slim`);
  const stage = stages[0]!;
  assert.ok(stage.name, `${file}: the Node stage has no name (FROM ... AS deps) to copy from`);
  return stage as Stage & { name: string };
}

function finalStage(df: Dockerfile): Stage {
  return df.stages.at(-1)!;
}

// The checks, one per part of the recipe: each throws, naming the file, on a difference.

function checkSources(df: Dockerfile, r: Recipe): void {
  const file = dockerfileName(r.spec);
  const fromContext = copiesOf(finalStage(df)).filter((c) => c.from === undefined);
  assert.deepEqual(
    fromContext.map((c) => c.source).sort(),
    [...r.sources].sort(),
    `${file}: the final stage copies other sources than appPaths (${r.spec.workspaces.join(', ')})`,
  );
  for (const c of fromContext) {
    assert.equal(c.dest, `${APP_DIR}/${c.source}`, `${file}: ${c.source} lands elsewhere than in ${APP_DIR}`);
  }
}

function checkDependencies(df: Dockerfile, r: Recipe): void {
  const file = dockerfileName(r.spec);
  const deps = nodeStage(df, file);
  const copied = copiesOf(deps);
  assert.ok(
    copied.every((c) => c.from === undefined),
    `${file}: the dependencies stage copies from another stage`,
  );
  assert.deepEqual(
    copied.map((c) => c.source).sort(),
    [...r.manifests].sort(),
    `${file}: the dependencies stage copies other files than the manifests npm ci reads in the recipe`,
  );
  for (const c of copied) {
    assert.equal(c.dest, `${APP_DIR}/${c.source}`, `${file}: ${c.source} lands elsewhere than in ${APP_DIR}`);
  }
  const lastCopy = deps.instructions.findLastIndex((i) => i.keyword === 'COPY');
  const npmCi = deps.instructions.findIndex(
    (i) => i.keyword === 'RUN' && /(^|&&\s*)npm ci --omit=dev --ignore-scripts(\s|$)/.test(i.args),
  );
  assert.ok(npmCi > lastCopy, `${file}: no RUN npm ci --omit=dev --ignore-scripts after the manifests`);
  assert.equal(workdirOf(deps, npmCi), APP_DIR, `${file}: npm ci runs elsewhere than in ${APP_DIR}`);
  const intoApp = copiesOf(finalStage(df)).filter(
    (c) => c.from !== undefined && (c.dest === APP_DIR || c.dest.startsWith(`${APP_DIR}/`)),
  );
  assert.deepEqual(
    intoApp,
    [{ from: deps.name, source: APP_DIR, dest: APP_DIR }],
    `${file}: the final stage should take ${APP_DIR} (manifests and node_modules) whole from ${deps.name}`,
  );
}

function checkNode(df: Dockerfile, r: Recipe): void {
  const file = dockerfileName(r.spec);
  const deps = nodeStage(df, file);
  const version = NODE_IMAGE.exec(deps.from)![1];
  assert.equal(version, r.nodeVersion, `${file}: ${deps.from} is not the pinned Node ${r.nodeVersion}`);
  const node = copiesOf(finalStage(df)).filter((c) => c.dest === NODE_PATH);
  assert.deepEqual(
    node,
    [{ from: deps.name, source: NODE_IMAGE_BINARY, dest: NODE_PATH }],
    `${file}: the final stage should copy ${NODE_IMAGE_BINARY} from ${deps.name} to ${NODE_PATH}`,
  );
}

function checkDebian(df: Dockerfile, r: Recipe): void {
  const file = dockerfileName(r.spec);
  const suite = NODE_IMAGE.exec(nodeStage(df, file).from)![2]!;
  const base = DISTROLESS_CC.exec(finalStage(df).from);
  assert.ok(base, `${file}: the final stage is FROM ${finalStage(df).from}, not distroless cc as nonroot`);
  assert.equal(
    DEBIAN_RELEASES[suite],
    base[1],
    `${file}: the Node stage runs Debian ${suite}, the final image Debian ${base[1]}`,
  );
}

function checkExtraPackages(df: Dockerfile, r: Recipe): void {
  const file = dockerfileName(r.spec);
  const deps = nodeStage(df, file);
  const downloaded = aptDownloaded(deps);
  assert.deepEqual(
    [...aptInstalled(deps), ...downloaded].sort(),
    [...r.spec.extraPackages].sort(),
    `${file}: apt-get installs or downloads other packages than the catalog's extraPackages`,
  );
  const preloaded = (r.spec.env.LD_PRELOAD ?? '').split(/[\s:]+/).filter((p) => p !== '');
  const fromDeps = copiesOf(finalStage(df)).filter((c) => c.from === deps.name);
  for (const p of preloaded) {
    assert.ok(
      fromDeps.some((c) => c.source === p && c.dest === p),
      `${file}: LD_PRELOAD names ${p}, which the final stage does not copy from ${deps.name}`,
    );
  }
  // `COPY --from=deps /extra /` copies the folder's contents into / (what the recipe's
  // extra layer holds); copiesOf names such a copy by the folder's own path.
  const extracted = fromDeps.find((c) => c.source === EXTRACTED);
  if (downloaded.length > 0) {
    assert.ok(
      extracted && copyDestOf(finalStage(df), EXTRACTED) === '/',
      `${file}: the packages apt-get downloads are extracted to ${EXTRACTED} and copied to / (the recipe's extra layer)`,
    );
  }
  const expected = [...preloaded, ...(extracted ? [extracted.dest] : []), NODE_PATH, APP_DIR];
  assert.deepEqual(
    fromDeps.map((c) => c.dest),
    expected,
    `${file}: the final stage should copy, in the recipe's layer order, ${expected.join(', ')} from ${deps.name}`,
  );
}

function checkOrder(df: Dockerfile, r: Recipe): void {
  const file = dockerfileName(r.spec);
  const kinds = copiesOf(finalStage(df)).map((c) => (c.from === undefined ? 'sources' : 'built'));
  const firstSource = kinds.indexOf('sources');
  assert.ok(
    firstSource >= 0 && kinds.slice(firstSource).every((k) => k === 'sources'),
    `${file}: the sources should be the last layers, as in the recipe (base, extra, node, dependencies, app)`,
  );
}

function checkConfig(df: Dockerfile, r: Recipe): void {
  const file = dockerfileName(r.spec);
  const last = finalStage(df);
  const entrypoint = only(last, 'ENTRYPOINT', file);
  assert.deepEqual(
    entrypoint.json,
    [NODE_PATH, `${APP_DIR}/${r.spec.entry}`],
    `${file}: ENTRYPOINT differs from the recipe's (or is not in exec form)`,
  );
  assert.equal(
    last.instructions.some((i) => i.keyword === 'CMD'),
    false,
    `${file}: a CMD would add arguments the recipe's image does not pass`,
  );
  assert.equal(only(last, 'USER', file).args, `${IMAGE_USER}:${IMAGE_USER}`, `${file}: USER`);
  assert.equal(workdirOf(last), APP_DIR, `${file}: WORKDIR`);
  assert.deepEqual(pairsOf(last, 'ENV'), { ...IMAGE_ENV, ...r.spec.env }, `${file}: ENV`);
}

function checkLabels(df: Dockerfile, r: Recipe): void {
  const file = dockerfileName(r.spec);
  const labels = pairsOf(finalStage(df), 'LABEL');
  assert.deepEqual(
    {
      title: labels['org.opencontainers.image.title'],
      description: labels['org.opencontainers.image.description'],
      licenses: labels['org.opencontainers.image.licenses'],
    },
    { title: r.spec.name, description: r.spec.description, licenses: r.license },
    `${file}: LABEL`,
  );
}

const CHECKS = [
  checkSources,
  checkDependencies,
  checkNode,
  checkDebian,
  checkExtraPackages,
  checkOrder,
  checkConfig,
  checkLabels,
];

describe('the Dockerfiles in images/', () => {
  const recipes = new Map<string, Recipe>();
  const texts = new Map<string, string>();
  const parsed = (spec: ImageSpec): Dockerfile => parseDockerfile(texts.get(spec.name)!);
  const eachImage = (check: (df: Dockerfile, r: Recipe) => void): void => {
    for (const spec of IMAGES) check(parsed(spec), recipes.get(spec.name)!);
  };

  before(async () => {
    for (const spec of IMAGES) {
      recipes.set(spec.name, await recipeOf(spec));
      texts.set(spec.name, await readFile(join(imagesDir, dockerfileName(spec)), 'utf8').catch(() => ''));
    }
  });

  it('there is a Dockerfile for every image of the catalog, and none for an image it does not list', async () => {
    const files = (await readdir(imagesDir)).filter((f) => f.endsWith('.Dockerfile')).sort();
    assert.deepEqual(files, IMAGES.map(dockerfileName).sort());
  });

  it("every image's Dockerfile copies the same sources as the daemonless recipe", () => {
    eachImage(checkSources);
  });

  it("every image's Dockerfile installs the dependencies from the same manifests, with the same npm ci", () => {
    eachImage(checkDependencies);
  });

  it("every image's Dockerfile runs the pinned Node version, at the recipe's path", () => {
    eachImage(checkNode);
  });

  it("every image's Dockerfile takes its libraries from the same Debian release as its final image", () => {
    eachImage(checkDebian);
  });

  it("every image's Dockerfile installs the catalog's extra packages and copies what LD_PRELOAD names", () => {
    eachImage(checkExtraPackages);
  });

  it("every image's Dockerfile puts the sources last, as the recipe's layers are ordered", () => {
    eachImage(checkOrder);
  });

  it("every image's Dockerfile starts the same entrypoint, as the same user, directory and environment", () => {
    eachImage(checkConfig);
  });

  it("every image's Dockerfile carries the recipe's title, description and licence labels", () => {
    eachImage(checkLabels);
  });

  it('a Dockerfile that drifts from the recipe fails the check', () => {
    const spec = IMAGES.find((s) => s.extraPackages.length > 0)!;
    const text = texts.get(spec.name)!;
    const recipe = recipes.get(spec.name)!;
    const checkAll = (t: string): void => {
      for (const check of CHECKS) check(parseDockerfile(t), recipe);
    };
    checkAll(text);
    const drifts: [string, (t: string) => string][] = [
      ['a source dropped', (t) => t.replace(/^COPY packages\/kit\/src .*\n/m, '')],
      ['a source added', (t) => t.replace(/^USER /m, 'COPY docs /app/docs\nUSER ')],
      ['a manifest dropped', (t) => t.replace(/^COPY packages\/kit\/package\.json .*\n/m, '')],
      ['another Node', (t) => t.replace(/node:\d+\.\d+\.\d+-/, 'node:22.0.0-')],
      ['the Node binary elsewhere', (t) => t.replace(/node \/usr\/local\/bin\/node$/m, 'node /usr/bin/node')],
      ['another entry', (t) => t.replace(/main\.ts"\]/, 'other.ts"]')],
      ['the shell-form entrypoint', (t) => t.replace(/^ENTRYPOINT .*$/m, `ENTRYPOINT node ${APP_DIR}/x.ts`)],
      ['another user', (t) => t.replace(/^USER .*$/m, 'USER 0')],
      ['another directory', (t) => t.replace(/^WORKDIR \/app\n(?=USER|ENV|LABEL)/m, 'WORKDIR /srv\n')],
      ['an environment variable dropped', (t) => t.replace(/NODE_ENV=production/, 'X=1')],
      ['the extra package dropped', (t) => t.replace(/(apt-get install .*) libjemalloc2/, '$1')],
      ['the preloaded library not copied', (t) => t.replace(/^COPY --from=deps \/usr\/lib\/.*\n/m, '')],
      ['another base', (t) => t.replace(/cc-debian\d+/, 'base-debian12')],
      ['another description', (t) => t.replace(/description="[^"]*"/, 'description="x"')],
    ];
    for (const [what, drift] of drifts) {
      const drifted = drift(text);
      assert.notEqual(drifted, text, `the drift "${what}" changed nothing in ${dockerfileName(spec)}`);
      assert.throws(() => checkAll(drifted), assert.AssertionError, `the check missed ${what}`);
    }
  });
});

describe('the Dockerfile reader', () => {
  it('joins continuation lines, dropping comment and blank lines inside them', () => {
    const ins = parseInstructions(
      ['RUN apt-get update \\', '  # a comment inside', '', '  && apt-get install -y x \\', '  && true'].join(
        '\n',
      ),
    );
    assert.deepEqual(ins, [
      {
        keyword: 'RUN',
        flags: {},
        args: 'apt-get update   && apt-get install -y x   && true',
        line: 1,
      },
    ]);
  });

  it('skips comments and parser directives, and reads keywords in any case', () => {
    const ins = parseInstructions(
      '# syntax=docker/dockerfile:1\n# escape=\\\n\n  # note\nfrom scratch\nuser 1:1\n',
    );
    assert.deepEqual(
      ins.map((i) => [i.keyword, i.args, i.line]),
      [
        ['FROM', 'scratch', 5],
        ['USER', '1:1', 6],
      ],
    );
  });

  it('refuses what it would misread: another escape character, heredocs, a dangling continuation', () => {
    assert.throws(() => parseInstructions('# escape=`\nFROM scratch'), /escape directive/);
    assert.throws(() => parseInstructions('FROM scratch\nRUN <<EOF\necho\nEOF'), /heredocs/);
    assert.throws(() => parseInstructions('FROM scratch\nRUN true \\'), /past the end/);
  });

  it('tells the exec (JSON) form from the shell form, taking broken JSON as shell form as Docker does', () => {
    const [exec, shell, broken, numbers] = parseInstructions(
      'ENTRYPOINT ["/usr/local/bin/node", "/app/a b.ts"]\nENTRYPOINT node /app/a.ts\nCMD [node, x]\nCMD [1, 2]',
    );
    assert.deepEqual(exec!.json, ['/usr/local/bin/node', '/app/a b.ts']);
    assert.equal(shell!.json, undefined);
    assert.equal(shell!.args, 'node /app/a.ts');
    assert.equal(broken!.json, undefined);
    assert.equal(numbers!.json, undefined);
  });

  it("reads COPY's flags, sources and destination in both forms", () => {
    const [shell, json] = parseInstructions(
      'COPY --from=deps --link a/b  c /app/\nCOPY --chown=1:1 ["with space", "/app/with space"]',
    );
    assert.deepEqual(shell!.flags, { from: 'deps', link: '' });
    assert.deepEqual(copyPaths(shell!), { sources: ['a/b', 'c'], dest: '/app/' });
    assert.deepEqual(json!.flags, { chown: '1:1' });
    assert.deepEqual(copyPaths(json!), { sources: ['with space'], dest: '/app/with space' });
  });

  it('groups instructions by stage, with global ARGs apart and stage names from AS', () => {
    const df = parseDockerfile(
      'ARG V=1\nFROM --platform=linux/amd64 node:24-slim AS deps\nRUN true\nFROM scratch\nCOPY --from=deps /a /a\n',
    );
    assert.deepEqual(
      df.globalArgs.map((a) => a.args),
      ['V=1'],
    );
    assert.deepEqual(
      df.stages.map((s) => [s.from, s.name, s.instructions.map((i) => i.keyword)]),
      [
        ['node:24-slim', 'deps', ['RUN']],
        ['scratch', undefined, ['COPY']],
      ],
    );
    assert.throws(() => parseDockerfile('RUN true\nFROM scratch'), /before the first FROM/);
  });

  it('reads ENV pairs with quotes and escapes, and refuses what Docker would expand or the legacy form', () => {
    const [env] = parseInstructions(`ENV A=1 B="two words" C='it''s' D=a\\ b E="q\\"\\\\" F=`);
    assert.deepEqual(keyValues(env!), [
      ['A', '1'],
      ['B', 'two words'],
      ['C', 'its'],
      ['D', 'a b'],
      ['E', 'q"\\'],
      ['F', ''],
    ]);
    assert.throws(() => shellWords('A=$HOME'), /variable substitution/);
    assert.throws(() => keyValues(parseInstructions('ENV A 1')[0]!), /legacy form/);
  });

  const keyArb = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_.]{0,8}$/);
  const valueArb = fc.string({ maxLength: 12 }).filter((s) => !/[\r\n]/.test(s));
  const quoted = (v: string): string => `"${v.replace(/["\\$]/g, (c) => `\\${c}`)}"`;

  it('reads back any ENV pairs written quoted, across continuation lines with comments between', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(keyArb, valueArb), { minLength: 1, maxLength: 5, selector: ([k]) => k }),
        fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
        (pairs, comments) => {
          // A comment line ends with a backslash too: it goes whole, continuing nothing.
          const lines = pairs.map(
            ([k, v], i) => `  ${k}=${quoted(v)}${comments[i] && i < pairs.length - 1 ? ' \\\n# c' : ''}`,
          );
          const text = `FROM scratch\nENV ${lines.join(' \\\n').trimStart()}\n`;
          const env = parseDockerfile(text).stages[0]!.instructions[0]!;
          assert.deepEqual(keyValues(env), pairs);
        },
      ),
    );
  });

  it('reads back any exec-form argument list written as JSON', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 10 }), { minLength: 1, maxLength: 4 }), (argv) => {
        const [ins] = parseInstructions(`ENTRYPOINT ${JSON.stringify(argv)}`);
        assert.deepEqual(ins!.json, argv);
      }),
    );
  });
});
