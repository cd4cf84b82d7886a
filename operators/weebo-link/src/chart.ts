/**
 * The chart rendered by `helm template`, as tests and check-rules use it: the objects a
 * release would create, parsed, with the test hook apart.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KubeObject } from '@operators/kit';
import { parseAllDocuments, stringify } from 'yaml';

export const CHART_DIR = join(import.meta.dirname, '..', 'chart');

export async function renderChart(
  helm: string,
  opts: { namespace: string; values: Record<string, unknown>; release?: string },
): Promise<{ objects: KubeObject[]; tests: KubeObject[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'weebo-link-chart-'));
  try {
    const valuesFile = join(dir, 'values.yaml');
    await writeFile(valuesFile, stringify(opts.values));
    const { stdout } = await promisify(execFile)(
      helm,
      ['template', opts.release ?? 'weebo-link', CHART_DIR, '--namespace', opts.namespace, '-f', valuesFile],
      { maxBuffer: 16 << 20 },
    );
    const all = parseAllDocuments(stdout)
      .map((d) => d.toJS() as KubeObject | null)
      .filter((o): o is KubeObject => !!o);
    const isTest = (o: KubeObject): boolean => o.metadata.annotations?.['helm.sh/hook'] === 'test';
    return { objects: all.filter((o) => !isTest(o)), tests: all.filter(isTest) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
