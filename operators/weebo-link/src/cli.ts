/**
 * `weebo-link` commands:
 *
 *   weebo-link run                       the controller (the chart's Deployment)
 *   weebo-link check-rules FILE [--kubeconfig PATH | --in-cluster]
 *                          [--policies RENDERED.yaml --samples SAMPLES.yaml]
 *
 * check-rules reads a values file or the rules ConfigMap (a `links:` document), checks
 * each rule offline (structure, CEL compile and type check, immutable paths), against
 * discovery when a cluster is given, and evaluates rendered admission policies (the
 * output of `helm template`) against sample requests. Exit 0 when all is well, 1 with a
 * message per problem otherwise, 2 on bad usage.
 */
import { readFile } from 'node:fs/promises';
import { KubeClient, type KubeObject } from '@operators/kit';
import { parse, parseAllDocuments } from 'yaml';
import { checkDiscovery, RULES_KEY } from './controllers/rules.ts';
import {
  type AdmissionRequest,
  derivePolicyRules,
  evaluatePolicy,
  isRecord,
  loadRules,
  pluralOf,
} from './domain/index.ts';

interface Io {
  readonly stdout: { write(s: string): unknown };
  readonly stderr: { write(s: string): unknown };
}

const USAGE = `usage: weebo-link run
       weebo-link check-rules FILE [--kubeconfig PATH | --in-cluster] [--policies RENDERED.yaml --samples SAMPLES.yaml]
`;

export async function main(argv: readonly string[], io: Io): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === 'run') {
    const { run } = await import('./main.ts');
    await run();
    return await new Promise<number>(() => {});
  }
  if (cmd !== 'check-rules') {
    io.stderr.write(USAGE);
    return 2;
  }
  const opts: {
    file?: string;
    kubeconfig?: string;
    inCluster?: boolean;
    policies?: string;
    samples?: string;
  } = {};
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === '--kubeconfig') opts.kubeconfig = rest[++i];
    else if (a === '--in-cluster') opts.inCluster = true;
    else if (a === '--policies') opts.policies = rest[++i];
    else if (a === '--samples') opts.samples = rest[++i];
    else if (a && !a.startsWith('--') && !opts.file) opts.file = a;
    else {
      io.stderr.write(`unknown argument ${a}\n${USAGE}`);
      return 2;
    }
  }
  if (!opts.file || (opts.policies && !opts.samples) || (!opts.policies && opts.samples)) {
    io.stderr.write(USAGE);
    return 2;
  }
  return checkRules(opts as { file: string } & typeof opts, io);
}

/** The `links:` document of a values file or of the rules ConfigMap. */
export function rulesText(text: string): string {
  const doc: unknown = (() => {
    try {
      return parse(text);
    } catch {
      return undefined;
    }
  })();
  if (isRecord(doc) && doc.kind === 'ConfigMap' && isRecord(doc.data))
    return String(doc.data[RULES_KEY] ?? '');
  return text;
}

async function checkRules(
  opts: { file: string; kubeconfig?: string; inCluster?: boolean; policies?: string; samples?: string },
  io: Io,
): Promise<number> {
  let failures = 0;
  const text = rulesText(await readFile(opts.file, 'utf8'));
  const { rules, errors, documentError } = loadRules(text);
  if (documentError) {
    io.stderr.write(`${opts.file}: ${documentError}\n`);
    return 1;
  }
  for (const e of errors) {
    failures++;
    io.stderr.write(`link ${e.link}: refused\n${e.problems.map((p) => `  - ${p}`).join('\n')}\n`);
  }
  let client: KubeClient | undefined;
  if (opts.kubeconfig || opts.inCluster) client = await KubeClient.load(opts.kubeconfig);
  for (const rule of rules) {
    const problems = client ? await checkDiscovery({ client }, rule) : [];
    if (problems.length) {
      failures++;
      io.stderr.write(
        `link ${rule.name}: refused by discovery\n${problems.map((p) => `  - ${p}`).join('\n')}\n`,
      );
    } else {
      io.stdout.write(
        `link ${rule.name}: ok (${rule.source.kind} in ${rule.source.namespaces.join(', ')} → ${rule.target.kind} in ${rule.target.namespace}${client ? ', served' : ''})\n`,
      );
    }
  }
  if (client) await client.transport.close();
  if (rules.length) {
    io.stdout.write('RBAC derived from the valid rules:\n');
    for (const r of derivePolicyRules(rules))
      io.stdout.write(`  ${r.apiGroups[0] || 'core'}/${r.resources[0]}: ${r.verbs.join(', ')}\n`);
  }
  if (opts.policies && opts.samples) failures += await checkPolicies(opts.policies, opts.samples, io);
  if (failures) io.stderr.write(`${failures} problem(s)\n`);
  return failures ? 1 : 0;
}

interface Sample {
  readonly name: string;
  readonly operation: AdmissionRequest['operation'];
  readonly username: string;
  readonly object: KubeObject | null;
  readonly oldObject?: KubeObject | null;
  readonly expect: 'allowed' | 'denied';
}

/** Every rendered ValidatingAdmissionPolicy evaluated on each sample; a sample is denied if any policy denies it. */
async function checkPolicies(policiesFile: string, samplesFile: string, io: Io): Promise<number> {
  const policies = parseAllDocuments(await readFile(policiesFile, 'utf8'))
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o?.kind === 'ValidatingAdmissionPolicy');
  const samples = parse(await readFile(samplesFile, 'utf8')) as Sample[];
  let failures = 0;
  for (const s of samples) {
    const obj = s.object ?? s.oldObject ?? null;
    const [group] = (obj?.apiVersion ?? '').includes('/') ? (obj?.apiVersion ?? '').split('/') : [''];
    const req: AdmissionRequest = {
      operation: s.operation,
      group: group ?? '',
      resource: pluralOf(obj?.kind ?? ''),
      object: s.object,
      oldObject: s.oldObject ?? null,
      userInfo: { username: s.username },
    };
    const denials = policies
      .map((p) => ({ p, v: evaluatePolicy(p, req) }))
      .filter((x) => x.v.matched && !x.v.allowed);
    const got = denials.length ? 'denied' : 'allowed';
    const why = denials
      .map((d) => `${d.p.metadata.name}: ${d.v.matched && !d.v.allowed ? d.v.message : ''}`)
      .join('; ');
    if (got === s.expect) io.stdout.write(`sample ${s.name}: ${got}${why ? ` (${why})` : ''}\n`);
    else {
      failures++;
      io.stderr.write(`sample ${s.name}: expected ${s.expect}, got ${got}${why ? ` (${why})` : ''}\n`);
    }
  }
  return failures;
}
