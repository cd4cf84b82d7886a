/**
 * The environment of the end-to-end suite: a control plane with a real node (see
 * packages/controlplane/src/node.ts), every image the charts need imported into the
 * node's containerd, and the kubectl and helm that users run. One per test run: the
 * suite's file starts it in `before` and stops it in `after`.
 *
 * For working on one operator's e2e module without starting a node per run:
 * `node e2e/support/dev-node.ts` starts the same environment and stays up, writing
 * {@link REUSE_FILE}; with `KUBE_OPERATORS_E2E_REUSE=1` the suite uses that one and
 * leaves it running (a development aid only: CI never sets it).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  ControlPlane,
  KUBERNETES_VERSION,
  NODE_DIR,
  resolveBinaries,
  resolveNodeBinaries,
} from '@operators/controlplane';
import { nodeImageArchives } from '@operators/images';

const exec = promisify(execFile);
const repo = join(import.meta.dirname, '..', '..');

/** Where a development node records itself for reuse. */
export const REUSE_FILE = join(tmpdir(), 'kube-operators-ts-e2e.json');

/** The sandbox image: our own pause build, under a local name (it is not upstream's image). */
export const SANDBOX_IMAGE = `localhost/kube-operators-ts/pause:${KUBERNETES_VERSION}`;
/** The charts' `helmTest.image`, set to our own kubectl build under a local name. */
export const KUBECTL_IMAGE = `localhost/kube-operators-ts/kubectl:${KUBERNETES_VERSION}`;

export interface NodeEnv {
  readonly kubeconfig: string;
  /** The apiserver's URL, on the node's address. */
  readonly url: string;
  /** The project's images by catalog name (`weebo-link`), as `repository:tag` references. */
  readonly images: Readonly<Record<string, string>>;
  /** Runs kubectl against the plane; rejects with its stderr. */
  kubectl(args: readonly string[], input?: string): Promise<string>;
  /** Runs helm against the plane; rejects with its stderr. */
  helm(args: readonly string[]): Promise<string>;
  /**
   * Restarts the node's kubelet and containerd, the containers left running, as a node
   * whose agents restart (not in reuse mode: the node belongs to another process).
   */
  restartNode(): Promise<void>;
  /** The node's folder: its processes' logs, to show why a pod failed. */
  readonly nodeDir: string;
  /** Stops the plane and its node (nothing for a reused one). */
  stop(): Promise<void>;
}

interface Reusable {
  readonly kubeconfig: string;
  readonly url: string;
  readonly images: Record<string, string>;
}

/** Starts the environment, or joins the development one with `KUBE_OPERATORS_E2E_REUSE=1`. */
export async function startNodeEnv(log: (m: string) => void = () => undefined): Promise<NodeEnv> {
  const tools = await resolveBinaries(log);
  if (process.env.KUBE_OPERATORS_E2E_REUSE === '1' && existsSync(REUSE_FILE)) {
    const r = JSON.parse(await readFile(REUSE_FILE, 'utf8')) as Reusable;
    const restart = async (): Promise<void> => {
      throw new Error('the node of a reused environment belongs to dev-node.ts');
    };
    return makeEnv(r, tools, async () => undefined, restart);
  }
  const nodeBinaries = await resolveNodeBinaries(log);
  const work = join(tmpdir(), 'kube-operators-ts-e2e-images');
  await mkdir(work, { recursive: true });
  const archives = await nodeImageArchives({
    repo,
    out: work,
    pause: { binary: nodeBinaries.pause, name: SANDBOX_IMAGE },
    kubectl: { binary: tools.kubectl, name: KUBECTL_IMAGE },
    log,
  });
  const plane = await ControlPlane.start({
    log,
    controllerManager: true,
    node: { binaries: nodeBinaries, sandboxImage: { name: SANDBOX_IMAGE, archive: archives.pause } },
  });
  try {
    const node = plane.node;
    if (!node) throw new Error('unreachable: the plane was started with a node');
    const started = Date.now();
    for (const a of [archives.kubectl, ...Object.values(archives.project).map((p) => p.archive)]) {
      await node.importImage(a);
    }
    log(`images imported into the node in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const images = Object.fromEntries(Object.entries(archives.project).map(([k, v]) => [k, v.reference]));
    const kubeconfig = join(plane.dir, 'kubeconfig');
    return makeEnv(
      { kubeconfig, url: plane.url, images },
      tools,
      () => plane.stop(),
      () => node.restartAgents(),
    );
  } catch (err) {
    await plane.stop();
    throw err;
  }
}

/** Records an environment for {@link startNodeEnv}'s reuse mode (dev-node.ts). */
export async function recordForReuse(env: NodeEnv): Promise<void> {
  const r: Reusable = { kubeconfig: env.kubeconfig, url: env.url, images: { ...env.images } };
  await writeFile(REUSE_FILE, JSON.stringify(r, null, 2));
}

function makeEnv(
  r: Reusable,
  tools: { kubectl: string; helm: string },
  stop: () => Promise<void>,
  restartNode: () => Promise<void>,
): NodeEnv {
  const run = async (bin: string, args: readonly string[], input?: string): Promise<string> => {
    const child = exec(bin, [...args], {
      env: { ...process.env, KUBECONFIG: r.kubeconfig, HELM_CACHE_HOME: join(tmpdir(), 'kot-e2e-helm') },
      maxBuffer: 64 * 1024 * 1024,
    });
    if (input !== undefined) child.child.stdin?.end(input);
    try {
      return (await child).stdout;
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(`${bin.split('/').pop()} ${args.join(' ')}: ${e.stderr?.trim() || e.message}`);
    }
  };
  return {
    kubeconfig: r.kubeconfig,
    url: r.url,
    images: r.images,
    kubectl: (args, input) => run(tools.kubectl, args, input),
    helm: (args) => run(tools.helm, args),
    restartNode,
    nodeDir: NODE_DIR,
    stop,
  };
}

/** The chart folder of an operator. */
export function chartOf(operator: string): string {
  return join(repo, 'operators', operator, 'chart');
}
