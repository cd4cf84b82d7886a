/**
 * `npm run up`: the main job. Starts a local control plane (building its binaries the
 * first time) with kube-controller-manager (garbage collection, namespace deletion,
 * ClusterRole aggregation; `npm run up -- --no-controller-manager` leaves it out),
 * installs every operator's CRDs, starts every operator that provides a local runner,
 * and keeps it all running until Ctrl-C. `npm run up -- --node` instead runs the operators
 * as pods on a real node of this machine, installed from their charts (scripts/up-node.ts).
 *
 * Conventions an operator follows to join:
 * - `operators/<name>/crds/*.yaml`: its generated CRDs, installed here.
 * - `operators/<name>/src/local.ts` exporting `runLocal(ctx)`: starts the operator
 *   against the plane with a sample to look at, and returns `{ stop() }`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  ControlPlane,
  ControlPlaneError,
  forceStopAll,
  installCrds,
  type LocalRunner,
} from '@operators/controlplane';
import { KubeClient, type KubeObject } from '@operators/kit';
import { type Logger, pino } from 'pino';
import { parseAllDocuments } from 'yaml';
import { formatLogLine } from './log-lines.ts';

const root = join(import.meta.dirname, '..');

/** The whole Ctrl-C, operators and plane, after which everything is killed. */
const STOP_BUDGET_MS = 5_000;
/** The operators' share: the plane needs the rest to stop etcd cleanly. */
const OPERATORS_BUDGET_MS = 2_500;

/** A logger for operator `op` writing `HH:MM:SS op LEVEL message key=value` lines to stdout. */
function operatorLogger(op: string): Logger {
  return pino(
    { base: { operator: op } },
    {
      write(line: string) {
        process.stdout.write(formatLogLine(line, op));
      },
    },
  );
}

function operators(): string[] {
  const dir = join(root, 'operators');
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

function projectCrds(): KubeObject[] {
  const out: KubeObject[] = [];
  for (const op of operators()) {
    const dir = join(root, 'operators', op, 'crds');
    if (!existsSync(dir)) continue;
    for (const f of readdirSync(dir)
      .filter((x) => x.endsWith('.yaml'))
      .sort()) {
      for (const doc of parseAllDocuments(readFileSync(join(dir, f), 'utf8'))) {
        const o = doc.toJS() as KubeObject | null;
        if (o?.kind === 'CustomResourceDefinition') out.push(o);
      }
    }
  }
  return out;
}

async function main(): Promise<void> {
  const log = (m: string): void => {
    process.stdout.write(`[up] ${m}\n`);
  };
  if (process.argv.slice(2).includes('--node')) {
    // The operators as pods on a real node, installed from their charts (scripts/up-node.ts).
    const { upWithNode } = await import('./up-node.ts');
    return upWithNode(log);
  }
  const controllerManager = !process.argv.slice(2).includes('--no-controller-manager');
  const plane = await ControlPlane.start({ log: (m) => log(m), controllerManager });
  // A test runs its own `up` beside a developer's: the kubeconfig's folder can move.
  const stateDir = process.env.KUBE_OPERATORS_UP_DIR ?? join(root, '.tmp');
  mkdirSync(stateDir, { recursive: true });
  const kubeconfig = join(stateDir, 'kubeconfig');
  writeFileSync(kubeconfig, plane.kubeconfig(), { mode: 0o600 });
  const client = await KubeClient.load(kubeconfig);

  const crds = projectCrds();
  if (crds.length) {
    await installCrds(client, crds);
    log(`installed ${crds.length} CRDs: ${crds.map((c) => c.metadata.name).join(', ')}`);
  }

  const running: { name: string; stop(): Promise<void> }[] = [];
  for (const op of operators()) {
    const entry = join(root, 'operators', op, 'src', 'local.ts');
    if (!existsSync(entry)) continue;
    const mod = (await import(pathToFileURL(entry).href)) as LocalRunner;
    const handle = await mod.runLocal({
      kubeconfigPath: kubeconfig,
      client,
      log: (m) => log(`${op}: ${m}`),
      logger: operatorLogger(op),
    });
    running.push({ name: op, stop: handle.stop });
    log(`${op} is running`);
  }

  const kubectl = plane.binaries.kubectl;
  process.stdout.write(
    [
      '',
      `The control plane is up at ${plane.url} (Kubernetes, etcd and kubectl built for this project` +
        `${controllerManager ? ', with kube-controller-manager' : ''}).`,
      'In another terminal:',
      '',
      `  export KUBECONFIG=${kubeconfig}`,
      `  alias kubectl=${kubectl}`,
      '  kubectl get --raw /version',
      '  kubectl get crds',
      '',
      '(or, without the exports: npm run kubectl -- get namespaces)',
      'Ctrl-C stops everything and removes the plane.',
      '',
    ].join('\n'),
  );

  // Ctrl-C: the operators first, while the plane still answers them (the plane's
  // processes are in their own process group, so the terminal's SIGINT does not reach
  // them), then the plane. Each step has a budget so the whole stop ends within 5 s;
  // a second Ctrl-C kills everything at once. Either way no process or folder is left.
  let stopping = false;
  const force = (why: string): never => {
    log(`${why}: killing the operators' servers and the plane now`);
    forceStopAll();
    rmSync(kubeconfig, { force: true });
    process.exit(130);
  };
  const within = <T>(ms: number, p: Promise<T>): Promise<T | 'timeout'> =>
    Promise.race([p, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms).unref())]);
  const stop = async (signal: string): Promise<void> => {
    if (stopping) force(`${signal} again`);
    stopping = true;
    const started = Date.now();
    log(`${signal}: stopping (press Ctrl-C again to kill at once)`);
    setTimeout(() => force('still stopping after 5 s'), STOP_BUDGET_MS).unref();
    const operatorsDone = Promise.allSettled(
      running.reverse().map((r) => r.stop().catch((e: unknown) => log(`${r.name}: ${String(e)}`))),
    );
    if ((await within(OPERATORS_BUDGET_MS, operatorsDone)) === 'timeout') {
      log(`the operators did not stop within ${OPERATORS_BUDGET_MS} ms; stopping the plane under them`);
    }
    await within(500, client.transport.close());
    await plane.stop();
    rmSync(kubeconfig, { force: true });
    log(`stopped in ${Date.now() - started} ms`);
    process.exit(0);
  };
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  process.removeAllListeners('SIGHUP');
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGHUP', () => void stop('SIGHUP'));
  setInterval(() => {}, 1 << 30);
}

main().catch((err: unknown) => {
  process.stderr.write(
    err instanceof ControlPlaneError ? `error: ${err.message}\n` : `${(err as Error).stack}\n`,
  );
  process.exit(1);
});
