/**
 * weebo-link assembled: a kit Manager (Lease leader election, health probes, metrics,
 * Events) with the rules controller, which starts one link controller per
 * valid rule. Used by the process (`main.ts`), the local run, the tests and the bench.
 */
import type { KubeClient, MetricsEndpointOptions, ProbeEndpointOptions } from '@operators/kit';
import { Manager } from '@operators/kit';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { RulesController } from './controllers/rules.ts';

export interface WeeboLinkOptions {
  readonly client: KubeClient;
  /** Where the rules ConfigMap and the Lease live (the release namespace). */
  readonly namespace: string;
  readonly configMap?: string;
  /** Lease-based election; on in production (two replicas, one acts). */
  readonly leaderElection?:
    | boolean
    | {
        readonly identity?: string;
        readonly leaseDurationMs?: number;
        readonly renewDeadlineMs?: number;
        readonly retryPeriodMs?: number;
      };
  /** `/healthz` and `/readyz` for the kubelet; none when omitted. */
  readonly healthProbe?: ProbeEndpointOptions;
  /** `/metrics`: loopback by default, or HTTPS with TokenReview + SubjectAccessReview (`secure`). */
  readonly metrics?: MetricsEndpointOptions;
  /** The registry the client counts its requests on too; the manager makes one when omitted. */
  readonly registry?: Registry;
  readonly logger?: Logger;
  readonly resyncMs?: number;
  readonly concurrency?: number;
}

export interface WeeboLink {
  readonly manager: Manager;
  readonly rules: RulesController;
  stop(): Promise<void>;
}

export async function startWeeboLink(opts: WeeboLinkOptions): Promise<WeeboLink> {
  const le = opts.leaderElection;
  const manager = new Manager({
    name: 'weebo-link',
    client: opts.client,
    logger: opts.logger,
    healthProbe: opts.healthProbe,
    metrics: opts.metrics,
    registry: opts.registry,
    shutdownTimeoutMs: 10_000,
    ...(le
      ? {
          leaderElection: {
            namespace: opts.namespace,
            name: 'weebo-link',
            ...(typeof le === 'object' ? le : {}),
          },
        }
      : {}),
  });
  const rules = new RulesController({
    manager,
    namespace: opts.namespace,
    configMap: opts.configMap,
    resyncMs: opts.resyncMs,
    concurrency: opts.concurrency,
  });
  await manager.start();
  return {
    manager,
    rules,
    async stop() {
      await manager.stop();
    },
  };
}
