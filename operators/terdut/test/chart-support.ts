/**
 * terdut-operator's chart as `helm template` renders it (the real helm binary, no
 * apiserver), through exoledge's generic chart helpers: the objects a release creates,
 * the CRDs (`--include-crds`), the helm test hook apart. Only what is terdut's is here.
 */
import { join } from 'node:path';
import type { KubeObject } from '@operators/kit';
import { type RenderedChart, renderChart as renderAnyChart } from '../../exoledge/test/chart-support.ts';

export {
  applyAll,
  bindingRows,
  byKind,
  httpsGet,
  kubectlAs,
  names,
  RBAC_KINDS,
  type RenderedChart,
  recordRbacRefusals,
  ruleRows,
  run,
} from '../../exoledge/test/chart-support.ts';

export const CHART_DIR = join(import.meta.dirname, '..', 'chart');

/** `helm template` of operators/terdut/chart, release `terdut` unless told. */
export function renderChart(
  helm: string,
  opts: { namespace: string; values?: Record<string, unknown>; release?: string },
): Promise<RenderedChart> {
  return renderAnyChart(helm, { ...opts, release: opts.release ?? 'terdut', chartDir: CHART_DIR });
}

/** The `kubectl` arguments of each container of the helm test pod, init containers first. */
export function helmTestCommands(pod: KubeObject): string[][] {
  const spec = pod.spec as { initContainers?: { args: string[] }[]; containers: { args: string[] }[] };
  return [...(spec.initContainers ?? []), ...spec.containers].map((c) => c.args);
}

/** A TerdutServer spec the chart accepts: a bring-your-own DSN and its password Secret. */
export const BYO_DATABASE = {
  dsn: 'postgres://terdut@terdut-postgres:5432/terdut?sslmode=require',
  passwordSecretRef: { name: 'terdut-postgres', key: 'password' },
} as const;
