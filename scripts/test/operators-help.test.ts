/**
 * Every operator's `--help`, run as the Deployment runs the operator: the manager's
 * flags are worded once by the kit, so the shared part is the same in all five but for
 * the operator's name, variable prefix and Lease; each operator's own flags follow it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';

const ROOT = join(import.meta.dirname, '..', '..');

interface Operator {
  readonly name: string;
  readonly args: readonly string[];
  readonly prefix: string;
  readonly lease: string;
  readonly own: readonly string[];
}

const OPERATORS: readonly Operator[] = [
  {
    name: 'terdut-operator',
    args: ['operators/terdut/src/main.ts'],
    prefix: 'TERDUT_',
    lease: 'terdut-operator.terdut.ryuvia.com',
    own: ['--resync DURATION', '--api-timeout DURATION', '--server-url NS/NAME=URL'],
  },
  {
    name: 'gitops-reverser',
    args: ['operators/gitops-reverser/src/main.ts'],
    prefix: 'GITOPS_REVERSER_',
    lease: 'gitops-reverser.configbutler.ai',
    own: ['--namespace NS', '--work-dir DIR', '--resync DURATION'],
  },
  {
    name: 'exoledge',
    args: ['operators/exoledge/src/main.ts'],
    prefix: 'EXOLEDGE_',
    lease: 'exoledge-operator.edge.exoledge.io',
    own: [
      '--decider-namespace NS',
      '--fetch-timeout DURATION',
      '--max-list-bytes N',
      '--extra-ca FILE',
      '--shortest-prefix-ipv4 N',
      '--shortest-prefix-ipv6 N',
      '--decider-image REF',
      '--waf-filter-image REF',
      '--gateway-class NAME',
      '--watch-namespaces NS,NS',
      '--valkey-url URL',
      '--trusted-hops N',
      '--client-address-header NAME',
    ],
  },
  {
    name: 'permissions-operator',
    args: ['operators/permissions/src/main.ts'],
    prefix: 'PERMISSIONS_',
    lease: 'stp-controller.permissions.shturval.tech',
    own: [
      '--health-probe-bind-address ADDR',
      '--bundle-bind-address ADDR',
      '--metrics-bind-address ADDR',
      '--webhook-port N',
      '--webhook-cert-dir DIR',
      '--argocd-namespace NS',
      '--cluster-deadline DURATION',
      '--permission-in-use-retry DURATION',
      '--scope-in-use-retry DURATION',
      '--tenant-scope-wait DURATION',
      '--scope-namespace-recheck DURATION',
      '--scope-cluster-recheck DURATION',
      '--resync DURATION',
    ],
  },
  {
    name: 'weebo-link',
    args: ['operators/weebo-link/bin/weebo-link.js', 'run'],
    prefix: '',
    lease: 'weebo-link',
    own: ['--namespace NS', '--rules-configmap NAME', '--resync-seconds N'],
  },
];

/** The flags every operator has, as the chart and the docs name them. */
const SHARED = [
  '--kubeconfig PATH',
  '--leader-election-namespace NS',
  '--leader-elect',
  '--health-port N',
  '--metrics-port N',
  '--insecure-metrics',
  '--metrics-cert-dir DIR',
  '--kube-api-qps N',
  '--kube-api-burst N',
  '--log-level LEVEL',
  '-h, --help',
  '--version',
];

function help(op: Operator): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [...op.args, '--help'],
      { cwd: ROOT, timeout: 60_000 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`${op.name} --help: ${err.message}\n${stderr}`));
        else resolve(stdout);
      },
    );
  });
}

/** The help's manager part: from its heading to the operator's own flags, name, prefix and Lease replaced. */
function sharedPart(op: Operator, text: string): string {
  const start = text.indexOf("The manager's flags");
  const end = text.indexOf(`\n${op.name}'s flags:\n`);
  assert.ok(
    start > 0 && end > start,
    `${op.name}: the help has no manager part before its own flags:\n${text}`,
  );
  const tail = text.slice(text.indexOf('\nExit status:'));
  let part = `${text.slice(start, end)}${tail}`.replaceAll(op.lease, '<LEASE>').replaceAll(op.name, '<NAME>');
  // The prefix precedes the shared variables' names; weebo-link's is empty.
  for (const v of ['LEADER_ELECTION', 'HEALTH_PORT', 'METRICS_', 'KUBE_API_', 'LOG_LEVEL'])
    part = part
      .replaceAll(`(${op.prefix}${v}`, `(<PREFIX>${v}`)
      .replaceAll(` ${op.prefix}${v}`, ` <PREFIX>${v}`);
  return part;
}

const HELPS = OPERATORS.map((op) => help(op));

test('the manager part of --help is the same in every operator but for its name, prefix and Lease', async () => {
  const parts = await Promise.all(
    OPERATORS.map(async (op, i) => sharedPart(op, await (HELPS[i] as Promise<string>))),
  );
  const [first, ...rest] = parts;
  assert.ok(first);
  for (const [i, part] of rest.entries())
    assert.equal(part, first, `${OPERATORS[i + 1]?.name} differs from ${OPERATORS[0]?.name}`);
  for (const flag of SHARED)
    assert.match(first, new RegExp(`^  ${flag.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}  `, 'm'), flag);
});

for (const [i, op] of OPERATORS.entries()) {
  test(`${op.name} --help lists its own flags after the manager's, with the prefixed variables`, async () => {
    const text = await (HELPS[i] as Promise<string>);
    const own = text.slice(text.indexOf(`\n${op.name}'s flags:\n`));
    for (const flag of op.own) assert.match(own, new RegExp(`^  ${flag}  `, 'm'), `${op.name}: ${flag}`);
    assert.match(text, new RegExp(`\\(${op.prefix}HEALTH_PORT\\) /healthz and /readyz; default 8081`));
  });
}
