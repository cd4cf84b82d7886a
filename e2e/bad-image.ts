/**
 * An image reference that does not exist: the release fails, the runtime's reason is
 * visible where a platform engineer looks (`kubectl describe pod`), and `helm uninstall`
 * still removes everything. weebo-link's chart, with a tag nobody built; the node sends
 * every registry to a closed local port, so the pull fails at once, on this machine.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { eventually } from './support/chart-checks.ts';
import { chartOf, type NodeEnv } from './support/node-env.ts';

const NS = 'e2e-bad-image';
const MISSING = 'ghcr.io/kube-operators-ts/weebo-link:0.0.0-does-not-exist';

export function describeBadImage(env: () => NodeEnv): void {
  describe('a chart installed with an image reference that does not exist', () => {
    it('leaves the release failed, with the pull failure refused on this machine in kubectl describe, and helm uninstall removes it all', async () => {
      const e = env();
      await assert.rejects(
        e.helm([
          'install',
          'bad-image',
          chartOf('weebo-link'),
          '-n',
          NS,
          '--create-namespace',
          '--set',
          'image.tag=0.0.0-does-not-exist',
          '--wait',
          '--timeout',
          '15s',
        ]),
        /context deadline exceeded|timed out|failed/,
      );
      assert.match(await e.helm(['status', 'bad-image', '-n', NS]), /STATUS: failed/);
      // One pod at a time: kubectl describes a list of pods without their events.
      const pods = (await e.kubectl(['get', 'pods', '-n', NS, '-o', 'name'])).trim().split('\n');
      assert.ok(pods[0], 'the release made pods');
      const described = await eventually('the pull failure described', 20_000, async () => {
        const d = await e.kubectl(['describe', '-n', NS, pods[0] as string]);
        return d.includes(`Failed to pull image "${MISSING}"`) ? d : undefined;
      });
      assert.match(described, /ErrImagePull|ImagePullBackOff/);
      // The runtime's reason: the node sends every registry to a closed port of its own,
      // so the pull was refused on this machine, no registry name was looked up.
      assert.match(described, /127\.0\.0\.1:1: connect: connection refused/);
      assert.doesNotMatch(described, /lookup |no such host/);
      await e.helm(['uninstall', 'bad-image', '-n', NS, '--wait', '--timeout', '60s']);
      // Its pods end after their grace period.
      const left = async (): Promise<string> =>
        (
          await e.kubectl([
            'get',
            'all,serviceaccounts,roles,rolebindings,configmaps',
            '-n',
            NS,
            '-l',
            'app.kubernetes.io/instance=bad-image',
            '-o',
            'name',
          ])
        ).trim();
      await eventually('nothing of the release', 60_000, async () =>
        (await left()) === '' ? true : undefined,
      ).catch(() => undefined);
      assert.equal(await left(), '');
    });

    after(async () => {
      await env()
        .kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false'])
        .catch(() => undefined);
    });
  });
}
