/**
 * The operator process as a child process: `node operators/permissions/src/main.ts`
 * prints its help, refuses bad flags with exit status 2 before it contacts any cluster
 * (the kubeconfig given does not exist, so reaching it would end otherwise), and exits
 * with status 3 naming the missing CRD against a plane without it. That plane is a
 * private one: the shared plane of a full run gets our CRDs from crds.test.ts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { privateTestEnv, type TestEnv } from '@operators/controlplane/testing';
import { permissionsCrds } from '../src/api/gen-crds.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const MAIN = 'operators/permissions/src/main.ts';
const MISSING_KUBECONFIG = '/nonexistent/permissions-main-flags/kubeconfig';

interface Exit {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs main.ts with `args`; a process still running after 60 s is killed (and fails the test). */
function run(args: readonly string[], env: Record<string, string> = {}): Promise<Exit> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !['KUBECONFIG', 'POD_NAMESPACE', 'ENABLE_WEBHOOKS'].includes(k),
    ),
  );
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, ...args],
      { cwd: ROOT, env: { ...base, ...env }, timeout: 60_000, killSignal: 'SIGKILL' },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/**
 * The runs that need no cluster, started together when the file loads: each costs a
 * Node start-up and module load, and the tests below only wait for their own.
 */
const HELP = run(['--help']);
const SHORT_HELP = run(['-h']);
const VERSION = run(['--version']);

test('--help prints the usage with every flag and exits 0', async () => {
  const r = await HELP;
  assert.equal(r.code, 0, r.stderr);
  assert.ok(r.stdout.startsWith('usage: node operators/permissions/src/main.ts [flags]\n'), r.stdout);
  for (const flag of [
    '--kubeconfig',
    '--health-probe-bind-address',
    '--bundle-bind-address',
    '--metrics-bind-address',
    '--leader-elect',
    '--webhook-port',
    '--webhook-cert-dir',
    '--argocd-namespace',
    '--cluster-deadline',
    '--permission-in-use-retry',
    '--scope-in-use-retry',
    '--tenant-scope-wait',
    '--scope-namespace-recheck',
    '--scope-cluster-recheck',
    '--sweep-period',
    '--kubeflow-gateway-principal',
    'ENABLE_WEBHOOKS',
    'POD_NAMESPACE',
  ]) {
    assert.ok(r.stdout.includes(flag), `the help mentions ${flag}`);
  }
  assert.equal(r.stderr, '');
  const short = await SHORT_HELP;
  assert.equal(short.code, 0);
  assert.equal(short.stdout, r.stdout);
});

test('--version prints the package version and exits 0', async () => {
  const r = await VERSION;
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '0.1.0\n');
});

const BAD: readonly { args: string[]; says: RegExp }[] = [
  { args: ['--no-such-flag'], says: /Unknown option '--no-such-flag'[\s\S]*\(--help lists the flags\)/ },
  {
    args: ['--cluster-deadline', 'soon'],
    says: /--cluster-deadline: not a duration such as 30s or 5m: soon/,
  },
  { args: ['--permission-in-use-retry', '1 minute'], says: /--permission-in-use-retry: not a duration/ },
  {
    args: ['--health-probe-bind-address', 'localhost'],
    says: /--health-probe-bind-address: not an address such as :8081 or 127\.0\.0\.1:8081: localhost/,
  },
  { args: ['--metrics-bind-address', ':99999'], says: /--metrics-bind-address: not an address/ },
  { args: ['--bundle-bind-address', '0'], says: /--bundle-bind-address: the bundle cannot be turned off/ },
  { args: ['--webhook-port', '70000'], says: /--webhook-port: not a port: 70000/ },
  { args: ['--webhook-port', 'https'], says: /--webhook-port: not a port: https/ },
  { args: ['--leader-elect'], says: /--leader-elect needs POD_NAMESPACE/ },
  { args: ['--sweep-period', 'often'], says: /--sweep-period: not a duration/ },
  // Istio reads an empty principals list as "anyone": refused.
  {
    args: ['--kubeflow-gateway-principal', ' , '],
    says: /--kubeflow-gateway-principal needs at least one principal/,
  },
];

const BAD_RUNS = BAD.map((bad) => run([...bad.args, '--kubeconfig', MISSING_KUBECONFIG]));

for (const [i, bad] of BAD.entries()) {
  test(`a bad flag (${bad.args.join(' ')}) exits 2 with a message naming it, before contacting a cluster`, async () => {
    const r = await (BAD_RUNS[i] as Promise<Exit>);
    assert.equal(r.code, 2, `exit status; stderr: ${r.stderr}`);
    assert.match(r.stderr, /^permissions-operator: /);
    assert.match(r.stderr, bad.says);
    assert.equal(r.stdout, '');
  });
}

let plane: TestEnv | undefined;
before(
  async () => {
    plane = await privateTestEnv();
  },
  { timeout: 120_000 },
);
after(async () => {
  await plane?.close();
});

/** Flags that would keep a started operator off the usual ports (it should never start here). */
const quiet = (kubeconfig: string) => [
  '--kubeconfig',
  kubeconfig,
  '--health-probe-bind-address',
  '127.0.0.1:0',
  '--bundle-bind-address',
  '127.0.0.1:0',
  '--metrics-bind-address',
  '0',
];

test('against a cluster without our CRDs it exits 3 naming the missing CRD; with ours but without Cluster API, naming the Cluster CRD', async () => {
  assert.ok(plane);
  const bare = await run(quiet(plane.kubeconfigPath), { ENABLE_WEBHOOKS: 'false' });
  assert.equal(bare.code, 3, `exit status; stderr: ${bare.stderr}`);
  assert.match(
    bare.stderr,
    /^permissions-operator: the cluster does not serve Permission \(permissions\.shturval\.tech\/v1beta1\): install operators\/permissions\/crds\/ first\n$/,
  );

  await plane.installCrds(permissionsCrds());
  const noCapi = await run(quiet(plane.kubeconfigPath), { ENABLE_WEBHOOKS: 'false' });
  assert.equal(noCapi.code, 3, `exit status; stderr: ${noCapi.stderr}`);
  assert.match(
    noCapi.stderr,
    /the cluster does not serve Cluster \(cluster\.x-k8s\.io\/v1beta2\): install Cluster API's CRDs/,
  );
});
