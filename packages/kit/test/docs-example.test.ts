/**
 * The example docs/kit.md shows is a real program: the page holds the file verbatim,
 * the type checker compiles it (tsconfig includes packages/kit/examples), and here it
 * runs against the real apiserver and does what the page says it does.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { eventually, type TestEnv, testEnv } from '@operators/controlplane/testing';
import type { KubeObject } from '@operators/kit';
import { widgetOperator } from '../examples/widget-operator.ts';
import { WIDGET_CRD } from './support/sample-operator.ts';

const CONFIGMAP = { apiVersion: 'v1', kind: 'ConfigMap' };
const root = join(import.meta.dirname, '..', '..', '..');

let env: TestEnv;
before(async () => {
  env = await testEnv();
  await env.installCrds([WIDGET_CRD]);
});
after(async () => {
  await env?.close();
});

describe('the documented example', () => {
  it('is shown on docs/kit.md exactly as the compiled file', () => {
    const file = readFileSync(join(root, 'packages/kit/examples/widget-operator.ts'), 'utf8');
    const page = readFileSync(join(root, 'docs/kit.md'), 'utf8');
    const blocks = [...page.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
    assert.ok(
      blocks.includes(file),
      'docs/kit.md has no ```ts block equal to packages/kit/examples/widget-operator.ts: copy the file into the page',
    );
  });

  it('gives a Widget its ConfigMap and records the generation it saw', async (t) => {
    const ns = await env.namespace(t, 'docs-example');
    const manager = widgetOperator(env.admin, { leaseNamespace: ns, ports: { health: 0, metrics: 0 } });
    t.after(() => manager.stop());
    await manager.start();
    await env.admin.create({
      apiVersion: 'kit.test.io/v1',
      kind: 'Widget',
      metadata: { name: 'hello', namespace: ns },
      spec: { message: 'hi there' },
    });
    const cm = await eventually('the ConfigMap', () => env.admin.find(CONFIGMAP, 'widget-hello', ns), 30_000);
    assert.deepEqual((cm as KubeObject & { data?: unknown }).data, { message: 'hi there' });
    const widget = await eventually(
      'the status',
      async () => {
        const w = await env.admin.get<KubeObject & { status?: { observedGeneration?: number } }>(
          { apiVersion: 'kit.test.io/v1', kind: 'Widget' },
          'hello',
          ns,
        );
        return w.status?.observedGeneration === 1 ? w : undefined;
      },
      30_000,
    );
    assert.equal((widget.status as { message?: string }).message, 'hi there');
  });
});
