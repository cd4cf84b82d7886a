/**
 * The manager's shared informers: one reflector (and one store) per kind, namespace and
 * selectors, whichever controllers ask for it. Two controllers that watch Secrets share
 * one watch and one copy of every Secret.
 */
import type { Logger } from 'pino';
import type { Clock } from '../base/clock.ts';
import type { KubeClient } from '../client/client.ts';
import type { GroupVersionKind, KubeObject } from '../client/types.ts';
import { Reflector, type ReflectorHealth, type ReflectorOptions } from './reflector.ts';

/** How a kind is watched; part of the informer's identity. */
export interface InformerOptions {
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly metadataOnly?: boolean;
  /** Keep `metadata.managedFields` in cached objects (for `hasDrifted(…, { fieldManager })`). */
  readonly keepManagedFields?: boolean;
}

export class InformerCache {
  private readonly reflectors = new Map<string, Reflector<KubeObject>>();
  private readonly client: KubeClient;
  private readonly log: Logger;
  private readonly clock: Clock | undefined;
  private readonly tuning: Partial<ReflectorOptions>;
  private started = false;

  constructor(client: KubeClient, log: Logger, clock?: Clock, tuning: Partial<ReflectorOptions> = {}) {
    this.client = client;
    this.log = log;
    this.clock = clock;
    this.tuning = tuning;
  }

  /** The shared reflector for `gvk` watched as `opts`, created on first use. */
  informer<T extends KubeObject = KubeObject>(
    gvk: GroupVersionKind,
    opts: InformerOptions = {},
  ): Reflector<T> {
    const id = JSON.stringify([
      gvk.apiVersion,
      gvk.kind,
      opts.namespace ?? '',
      opts.labelSelector ?? '',
      opts.fieldSelector ?? '',
      !!opts.metadataOnly,
      !!opts.keepManagedFields,
    ]);
    let r = this.reflectors.get(id);
    if (!r) {
      r = new Reflector<KubeObject>({
        ...this.tuning,
        client: this.client,
        gvk,
        ...opts,
        log: this.log,
        clock: this.clock,
      });
      this.reflectors.set(id, r);
      if (this.started) r.start();
    }
    return r as unknown as Reflector<T>;
  }

  start(): void {
    this.started = true;
    for (const r of this.reflectors.values()) r.start();
  }

  /** Resolves when every informer has stored its first list. */
  async waitForSync(signal?: AbortSignal): Promise<void> {
    const all = Promise.all([...this.reflectors.values()].map((r) => r.waitForSync()));
    if (!signal) {
      await all;
      return;
    }
    await Promise.race([
      all,
      new Promise((_, reject) =>
        signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
      ),
    ]);
  }

  health(): ReflectorHealth[] {
    return [...this.reflectors.values()].map((r) => r.health());
  }

  async stop(): Promise<void> {
    await Promise.all([...this.reflectors.values()].map((r) => r.stop()));
  }
}
