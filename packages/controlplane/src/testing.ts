/**
 * What tests need from a control plane: an admin client, clients impersonating any
 * user or service account, a namespace per test, and CRD installation that waits
 * until the CRD is served.
 *
 * One plane is shared by a whole `npm test` run (started by global-setup.ts, which
 * exports its kubeconfig in KUBE_OPERATORS_TEST_KUBECONFIG). A test file run alone
 * starts a plane of its own. Tests that stop or restart the apiserver must not touch
 * the shared one: they call {@link privateTestEnv}.
 */

import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ApiErrorReason,
  KubeClient as Client,
  isApiError,
  type KubeClient,
  type KubeObject,
} from '@operators/kit';
import { ControlPlane, type ControlPlaneOptions, compactEtcd } from './controlplane.ts';
import { installCrds } from './crds.ts';
import { type CrdDocument, type ThirdParty, thirdPartyCrds } from './third-party-crds.ts';

// installCrds lives in crds.ts, product code (`npm run up`) uses it too; re-exported for the tests.
export { installCrds } from './crds.ts';
export { aptCommand, ensureDebianPackages, isInstalled } from './debian-packages.ts';
export { freePort } from './free-port.ts';
export { type Registry, registryBinary, startRegistry } from './registry.ts';

export const SHARED_KUBECONFIG_ENV = 'KUBE_OPERATORS_TEST_KUBECONFIG';
export const SHARED_ETCD_ENV = 'KUBE_OPERATORS_TEST_ETCD';

export interface TestEnv {
  readonly kubeconfigPath: string;
  /** A client in `system:masters`. */
  readonly admin: KubeClient;
  /** Set when this env owns its plane (a private env, or a file run alone). */
  readonly plane: ControlPlane | undefined;
  /** A client acting as `user`, member of `groups` (plus `system:authenticated`, added by the apiserver). */
  as(user: string, groups?: readonly string[]): KubeClient;
  /** A client acting as a service account; the apiserver adds its groups. */
  asServiceAccount(namespace: string, name: string): KubeClient;
  /**
   * A fresh namespace, deleted when the test ends. Pass the test's context `t`: in
   * node:test, an `after()` registered from inside a top-level `before()` runs at once,
   * so a namespace made there would be deleted before any test used it.
   */
  namespace(t: TestContext | { after: (fn: () => Promise<void>) => void }, prefix?: string): Promise<string>;
  /** Creates or updates CRDs and waits until each is Established. */
  installCrds(crds: readonly CrdDocument[] | readonly KubeObject[]): Promise<void>;
  /** Installs the CRDs of a third-party system, read from its Go module. */
  installThirdParty(...which: ThirdParty[]): Promise<void>;
  /** Compacts etcd to its current revision: every older resourceVersion becomes 410 Gone. */
  compactEtcd(): Promise<number>;
  /** Stops the plane if this env owns it. */
  close(): Promise<void>;
}

let shared: Promise<TestEnv> | undefined;

/**
 * The run's shared environment. Safe for tests that create their own namespaces and
 * cluster-scoped objects with unique names; not for tests that restart processes.
 */
export function testEnv(): Promise<TestEnv> {
  shared ??= (async () => {
    const path = process.env[SHARED_KUBECONFIG_ENV];
    const etcd = process.env[SHARED_ETCD_ENV];
    if (path && etcd) return makeEnv(path, etcd, undefined);
    const plane = await ControlPlane.start();
    return makeEnv(plane.kubeconfigPath, plane.etcdUrl, plane);
  })();
  return shared;
}

/** A control plane of the test's own, for tests that stop, restart or crash it. */
export async function privateTestEnv(
  opts: ControlPlaneOptions = {},
): Promise<TestEnv & { plane: ControlPlane }> {
  const plane = await ControlPlane.start(opts);
  return (await makeEnv(plane.kubeconfigPath, plane.etcdUrl, plane)) as TestEnv & { plane: ControlPlane };
}

let counter = 0;

async function makeEnv(
  kubeconfigPath: string,
  etcdUrl: string,
  plane: ControlPlane | undefined,
): Promise<TestEnv> {
  const admin = await Client.load(kubeconfigPath);
  const env: TestEnv = {
    kubeconfigPath,
    admin,
    plane,
    as: (user, groups = []) => admin.impersonate({ user, groups }),
    asServiceAccount: (namespace, name) =>
      admin.impersonate({ user: `system:serviceaccount:${namespace}:${name}` }),
    async namespace(t, prefix = 't') {
      const slug = prefix
        .toLowerCase()
        .replace(/[^a-z0-9-]+/g, '-')
        .slice(0, 30)
        .replace(/-+$/, '');
      const name = `${slug}-${process.pid}-${++counter}-${Math.random().toString(36).slice(2, 6)}`;
      await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      t.after(async () => {
        // Without kube-controller-manager (the shared plane runs none), deleting only
        // marks it Terminating; the objects stay in etcd but the name is unique. A plane
        // with it empties and removes the namespace in the background.
        await admin.delete({ apiVersion: 'v1', kind: 'Namespace' }, name).catch(() => undefined);
      });
      return name;
    },
    async installCrds(crds) {
      await installCrds(admin, crds as readonly KubeObject[]);
    },
    async installThirdParty(...which) {
      for (const w of which) await installCrds(admin, (await thirdPartyCrds(w)) as unknown as KubeObject[]);
    },
    compactEtcd: () => compactEtcd(etcdUrl),
    async close() {
      await admin.transport.close();
      await plane?.stop();
    },
  };
  return env;
}

/** Polls `fn` until it returns a value other than undefined, or fails after `timeoutMs` with `what`. */
export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs = 20_000,
  /** Between probes; a probe that reads git or lists much wants more than the default. */
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      if (!isApiError(err, ApiErrorReason.NotFound)) last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`,
      );
    }
    await sleep(intervalMs);
  }
}
