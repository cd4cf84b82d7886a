/**
 * `npm run up`: weebo-link on the local control plane with RFC 0002's example rule, the
 * fake AuthentikUser and StalwartAccount CRDs, a fake Stalwart operator, and a few
 * users, so that a newcomer sees a StalwartAccount appear, lock and detach:
 *
 *   kubectl get stalwartaccount -A -l link.weebo.io/link -L link.weebo.io/state
 *   kubectl -n auth patch authentikuser bob --type merge -p '{"spec":{"isActive":false}}'
 *   kubectl -n auth delete authentikuser carol
 */
import { installCrds, type LocalContext } from '@operators/controlplane';
import { pino } from 'pino';
import { startWeeboLink } from './app.ts';
import { RULES_CONFIGMAP, RULES_KEY } from './controllers/rules.ts';
import { EXAMPLE_RULES_YAML } from './example-rules.ts';
import { authentikUser, TEST_CRDS } from './testkit/crds.ts';
import { startFakeStalwart } from './testkit/fake-stalwart.ts';

export async function runLocal(ctx: LocalContext): Promise<{ stop(): Promise<void> }> {
  const { client, log } = ctx;
  await installCrds(client, TEST_CRDS);
  for (const ns of ['auth', 'mail', 'weebo-link'])
    await client.apply(
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
      { fieldManager: 'up', force: true },
    );
  await client.apply(
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: RULES_CONFIGMAP, namespace: 'weebo-link' },
      data: { [RULES_KEY]: EXAMPLE_RULES_YAML },
    },
    { fieldManager: 'up', force: true },
  );
  // Warnings only: the example's every link would otherwise fill the terminal.
  const logger = ctx.logger?.child({}, { level: 'warn' }) ?? pino({ level: 'warn' });
  const stalwart = await startFakeStalwart({ client, namespace: 'mail', logger });
  const link = await startWeeboLink({
    client,
    namespace: 'weebo-link',
    logger,
    healthProbe: { port: 0 },
    metrics: { port: 0 },
  });
  for (const [name, isActive] of [
    ['alice', true],
    ['bob', true],
    ['carol', true],
  ] as const)
    await client.apply(authentikUser(name, 'auth', { isActive }), { fieldManager: 'up', force: true });
  log(
    `rule authentik-user-stalwart-account loaded; users alice, bob, carol in auth; metrics on :${link.manager.metricsEndpoint?.port}/metrics`,
  );
  log('watch:  kubectl get stalwartaccount -A -l link.weebo.io/link -L link.weebo.io/state -w');
  log(`lock:   kubectl -n auth patch authentikuser bob --type merge -p '{"spec":{"isActive":false}}'`);
  log('detach: kubectl -n auth delete authentikuser carol');
  return {
    async stop() {
      await link.stop();
      await stalwart.stop();
    },
  };
}
