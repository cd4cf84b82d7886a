/**
 * gitops-reverser's chart as `helm template` renders it (the real helm binary, no
 * apiserver), through exoledge's generic chart helpers: the objects a release creates,
 * the CRDs (`--include-crds`), the helm test hook apart. Only what is gitops-reverser's is here.
 */
import { join } from 'node:path';
import type { KubeObject } from '@operators/kit';
import { type RenderedChart, renderChart as renderAnyChart } from '../../exoledge/test/chart-support.ts';

export {
  bindingRows,
  byKind,
  httpsGet,
  kubectlAs,
  names,
  type RenderedChart,
  recordRbacRefusals,
  ruleRows,
  run,
} from '../../exoledge/test/chart-support.ts';

export const CHART_DIR = join(import.meta.dirname, '..', 'chart');

/** `helm template` of operators/gitops-reverser/chart, release `gitops-reverser` unless told. */
export function renderChart(
  helm: string,
  opts: { namespace: string; values?: Record<string, unknown>; release?: string },
): Promise<RenderedChart> {
  return renderAnyChart(helm, { ...opts, release: opts.release ?? 'gitops-reverser', chartDir: CHART_DIR });
}

/** The `kubectl` arguments of each container of the helm test pod, init containers first. */
export function helmTestCommands(pod: KubeObject): string[][] {
  const spec = pod.spec as { initContainers?: { args: string[] }[]; containers: { args: string[] }[] };
  return [...(spec.initContainers ?? []), ...spec.containers].map((c) => c.args);
}
