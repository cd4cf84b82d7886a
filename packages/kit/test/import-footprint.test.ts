/**
 * Importing the kit does not load `@kubernetes/client-node` (~90 MB of generated API):
 * only reading a kubeconfig does. A child process records every module it loads through
 * a synchronous `module.registerHooks` load hook, which sees ES modules and `require()`
 * alike (client-node's dist is ESM, some of its dependencies CommonJS), then imports
 * the kit; the RSS it reports is printed for comparison.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const root = join(import.meta.dirname, '..', '..', '..');

/** Runs `body` after a recording hook is installed; prints `{ urls, rss }` of the child. */
function childImports(body: string): { urls: string[]; rssBefore: number; rssAfter: number } {
  const script = `
    import { registerHooks } from 'node:module';
    const urls = new Set();
    registerHooks({ load(url, context, next) { urls.add(url); return next(url, context); } });
    globalThis.gc(); const rssBefore = process.memoryUsage().rss;
    ${body}
    globalThis.gc(); const rssAfter = process.memoryUsage().rss;
    process.stdout.write(JSON.stringify({ urls: [...urls], rssBefore, rssAfter }));
  `;
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
    cwd: root,
    encoding: 'utf8',
  });
  return JSON.parse(out);
}

const CLIENT_NODE = '/node_modules/@kubernetes/client-node/';
const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;

describe('import footprint', () => {
  it('importing the kit loads no @kubernetes/client-node', (t) => {
    const { urls, rssBefore, rssAfter } = childImports(`await import('@operators/kit');`);
    t.diagnostic(`RSS ${mb(rssBefore)} before import('@operators/kit'), ${mb(rssAfter)} after`);
    // The hook saw the kit and its dependencies: the check below is not vacuous.
    assert.ok(urls.some((u) => u.includes('/packages/kit/src/client/transport.ts')));
    assert.ok(urls.some((u) => u.includes('/node_modules/undici/')));
    assert.deepEqual(
      urls.filter((u) => u.includes(CLIENT_NODE)),
      [],
    );
  });

  it('reading a kubeconfig loads it', () => {
    const { urls } = childImports(`
      const { KubeconfigCredentials } = await import('@operators/kit');
      await KubeconfigCredentials.fromString(${JSON.stringify(
        [
          'apiVersion: v1',
          'kind: Config',
          'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]',
          'users: [{name: u, user: {token: t}}]',
          'contexts: [{name: x, context: {cluster: c, user: u}}]',
          'current-context: x',
        ].join('\n'),
      )});
    `);
    assert.ok(urls.some((u) => u.includes(CLIENT_NODE)));
  });
});
