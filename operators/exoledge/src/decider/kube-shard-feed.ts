/**
 * The shard ConfigMaps as the API serves them: a kit `Reflector` on the ConfigMaps of the
 * shard namespace that carry the `edge.exoledge.io/source` label. Read-only: list and
 * watch, which the decider's Role (`shard-access.ts`) grants, and nothing else.
 *
 * Events are coalesced: a list published as 60 shards is 60 watch events in a few
 * milliseconds, and each view costs a selection (hashing every complete version), so the
 * view is delivered once the events pause for `COALESCE_MS`. Nothing is delivered before
 * the reflector's first complete list.
 */
import type { KubeClient } from '@operators/kit';
import { Reflector } from '@operators/kit';
import type { Logger } from 'pino';
import { CONFIG_MAP, type ConfigMap } from '../api/cilium.ts';
import { LABEL_SOURCE } from '../domain/blocklist-source/publication.ts';
import type { FeedHealth, ShardFeed } from './shard-feed.ts';
import type { ObservedConfigMap } from './shard-sets.ts';

/** How long events must pause before the view is delivered. */
export const COALESCE_MS = 50;

export interface KubeShardFeedOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly log: Logger;
}

export class KubeShardFeed implements ShardFeed {
  readonly #reflector: Reflector<ConfigMap>;
  #timer: NodeJS.Timeout | undefined;
  #onChange: ((configMaps: readonly ObservedConfigMap[]) => void) | undefined;

  constructor(options: KubeShardFeedOptions) {
    this.#reflector = new Reflector<ConfigMap>({
      client: options.client,
      gvk: CONFIG_MAP,
      namespace: options.namespace,
      // A bare key selects the objects carrying the label, whatever its value.
      labelSelector: LABEL_SOURCE,
      log: options.log,
    });
  }

  start(onChange: (configMaps: readonly ObservedConfigMap[]) => void): void {
    this.#onChange = onChange;
    this.#reflector.onDelta(() => this.#schedule());
    this.#reflector.onSnapshot(() => this.#schedule());
    this.#reflector.start();
  }

  health(): FeedHealth {
    const h = this.#reflector.health();
    return { synced: h.synced, stale: h.stale, lastError: h.lastError };
  }

  async stop(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#onChange = undefined;
    await this.#reflector.stop();
  }

  #schedule(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (!this.#reflector.store.hasSynced()) return;
      const view = this.#reflector.store.list().map(
        (cm): ObservedConfigMap => ({
          name: cm.metadata.name ?? '',
          labels: cm.metadata.labels,
          data: cm.data,
        }),
      );
      this.#onChange?.(view);
    }, COALESCE_MS);
  }
}
