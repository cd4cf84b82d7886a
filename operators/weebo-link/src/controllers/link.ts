/**
 * One rule at run time: a controller whose keys are target keys (`namespace/name`).
 * It watches the target kind in the rule's target namespace (one informer per kind and
 * namespace, filtered on the link label, shared by every rule of that kind there), the
 * names in use in that namespace (metadata only, labelled or not, so an unlabelled target
 * is found without a GET per creation), and the source kind in each of the rule's
 * namespaces (`*`: one cluster-wide informer), whose objects map to the key of the
 * target they ask for. A reconcile reads the pair from the caches, asks the domain
 * what to do, and does it: thin by design.
 *
 * Never a write on a source: sources are only read. Departures missed while weebo-link
 * was down are found because every target is reconciled at start and at every resync.
 */
import {
  ApiErrorReason,
  type Controller,
  EventType,
  isApiError,
  type KubeObject,
  type Manager,
  objectKey,
  type Predicate,
  type ReconcileResult,
  type Reflector,
  type Store,
  TerminalError,
} from '@operators/kit';
import {
  ALL_NAMESPACES,
  type Decision,
  decide,
  fieldManagerOf,
  headerAnnotation,
  LINK_LABEL,
  parseSourceRef,
  type Rule,
  SOURCE_ANNOTATION,
  targetKeyOf,
} from '../domain/index.ts';
import type { LinkMetrics } from './metrics.ts';
import { OWN_WRITE_GRACE_MS, OwnWrites } from './own-writes.ts';

/** How long a Detaching target waits before `safe` is evaluated again without an event. */
const SAFE_RECHECK_MS = 30_000;

export interface LinkOptions {
  readonly manager: Manager;
  readonly rule: Rule;
  readonly metrics: LinkMetrics;
  readonly resyncMs: number;
  readonly concurrency: number;
  /** The rules ConfigMap, where creations are counted by one `Linked` Event series per rule. */
  readonly linkedNotice?: () => KubeObject | undefined;
}

/**
 * The shared informer of a target kind in a rule's target namespace: every object there
 * carrying a link label (shared by every rule of that kind and namespace). Namespaced, as
 * weebo-link's RBAC is: a cluster-wide list would be forbidden (RFC 0002, Sécurité).
 */
export function targetInformer(manager: Manager, rule: Pick<Rule, 'target'>): Reflector<KubeObject> {
  return manager.cache.acquire(
    { apiVersion: rule.target.apiVersion, kind: rule.target.kind },
    // managedFields kept: drift is judged on the fields weebo-link's field manager owns,
    // so that a field dropped from a mapping is released (lifecycle.ts).
    { namespace: rule.target.namespace, labelSelector: LINK_LABEL, keepManagedFields: true },
  );
}

/**
 * The other names in use in a rule's target namespace: every object of the target kind
 * there without a link label (labelled ones are in {@link targetInformer}'s cache), as
 * metadata only (names, labels, deletion; no spec). It answers "does a target of that
 * name exist without our label?" from the cache, where a live GET per creation cost as
 * much as the creation itself; and, unlike a names cache of every object, it is not sent
 * each target weebo-link writes a second time. While its watch is down, the reconciler
 * asks the server instead.
 */
export function targetNamesInformer(manager: Manager, rule: Pick<Rule, 'target'>): Reflector<KubeObject> {
  return manager.cache.acquire(
    { apiVersion: rule.target.apiVersion, kind: rule.target.kind },
    unlabelledNames(rule),
  );
}

/** The names informer's options; the controller's watch of freed names uses the same informer. */
function unlabelledNames(rule: Pick<Rule, 'target'>) {
  return { namespace: rule.target.namespace, metadataOnly: true, labelSelector: `!${LINK_LABEL}` } as const;
}

/** Sources by the target key they map to, kept from the source informers' changes. */
class SourceIndex {
  private readonly byTarget = new Map<string, Set<string>>();
  private readonly bySource = new Map<string, string>();
  private readonly rule: Rule;
  disposed = false;

  constructor(rule: Rule) {
    this.rule = rule;
  }

  observe(type: 'added' | 'updated' | 'deleted', obj: KubeObject): void {
    if (this.disposed) return;
    const sk = objectKey(obj);
    const before = this.bySource.get(sk);
    if (before !== undefined) {
      this.byTarget.get(before)?.delete(sk);
      if (this.byTarget.get(before)?.size === 0) this.byTarget.delete(before);
      this.bySource.delete(sk);
    }
    if (type === 'deleted') return;
    const tk = mapSource(this.rule, obj)[0];
    if (tk === undefined || tk.startsWith('!')) return;
    this.bySource.set(sk, tk);
    const set = this.byTarget.get(tk) ?? new Set<string>();
    set.add(sk);
    this.byTarget.set(tk, set);
  }

  sourcesOf(targetKey: string): readonly string[] {
    return [...(this.byTarget.get(targetKey) ?? [])];
  }
}

/**
 * The key a source maps to: its target's key if it carries the rule's header (any
 * value: a wrong value is reported, not ignored), `!<source key>` if the target's name
 * cannot be evaluated (reported on the source), none without the header.
 */
function mapSource(rule: Rule, obj: KubeObject): readonly string[] {
  if (obj.metadata.annotations?.[headerAnnotation(rule.header)] === undefined) return [];
  const k = targetKeyOf(rule, obj);
  return [k.ok ? k.value : `!${objectKey(obj)}`];
}

export class LinkRuntime {
  readonly rule: Rule;
  readonly controller: Controller;
  private readonly manager: Manager;
  private readonly metrics: LinkMetrics;
  private readonly index: SourceIndex;
  private readonly targets: Reflector<KubeObject>;
  /** Removes this runtime's handlers from the shared source informers. */
  private readonly unsubscribe: (() => void)[] = [];
  private readonly names: Reflector<KubeObject>;
  private readonly linkedNotice: () => KubeObject | undefined;
  private readonly sources = new Map<string, Reflector<KubeObject>>();
  private readonly writes = new OwnWrites();
  /**
   * Keys a waiting source asks for that just left the unlabelled names cache: deleted, or
   * labelled by an admin to be attached and not yet in the labelled cache. Only the server
   * tells which: deciding "absent" would apply over a hand-labelled target as a creation,
   * skipping the attach and its immutable check.
   */
  private readonly leftNames = new Set<string>();

  constructor(opts: LinkOptions) {
    const { manager, rule } = opts;
    this.rule = rule;
    this.manager = manager;
    this.metrics = opts.metrics;
    this.index = new SourceIndex(rule);
    const sourceGvk = { apiVersion: rule.source.apiVersion, kind: rule.source.kind };
    const targetGvk = { apiVersion: rule.target.apiVersion, kind: rule.target.kind };
    this.targets = targetInformer(manager, rule);
    this.names = targetNamesInformer(manager, rule);
    this.linkedNotice = opts.linkedNotice ?? (() => undefined);

    for (const ns of rule.source.namespaces) {
      const informer = manager.cache.acquire(sourceGvk, sourceScope(ns));
      this.sources.set(ns, informer);
      // Seed from what a shared informer already holds, then follow its changes (a new
      // informer's initial state arrives as changes: an unsynced store refuses reads).
      if (informer.store.hasSynced()) for (const o of informer.store.list()) this.index.observe('added', o);
      this.unsubscribe.push(informer.onDelta((d) => this.index.observe(d.type, d.object)));
    }

    // The echo of our own settled write brings nothing to decide (own-writes.ts). A
    // target that leaves the labelled cache (deleted, or its label removed by hand) may
    // not be in the names cache yet: a source still asking for it reads the server.
    const ours: Predicate = (d) => {
      if (d.type === 'deleted' && this.index.sourcesOf(objectKey(d.object)).length > 0)
        this.leftNames.add(objectKey(d.object));
      return (
        !this.writes.echo(d) &&
        (d.object.metadata.labels?.[LINK_LABEL] === rule.name ||
          (d.type === 'updated' && d.old.metadata.labels?.[LINK_LABEL] === rule.name))
      );
    };
    let builder = manager
      .controller(`link-${rule.name}`)
      .for(targetGvk, {
        namespace: rule.target.namespace,
        labelSelector: LINK_LABEL,
        // The same informer as targetInformer's (keepManagedFields is part of its identity).
        keepManagedFields: true,
        predicates: [ours],
      })
      .withConcurrency(opts.concurrency)
      .resyncEvery(opts.resyncMs);
    for (const ns of rule.source.namespaces)
      builder = builder.watches(sourceGvk, (o) => mapSource(rule, o), sourceScope(ns));
    // A name freed (an unlabelled target deleted, or unlabelled by hand to be attached:
    // it leaves this cache) is a target a waiting source may now get. Ours come and go
    // through the labelled informer.
    builder = builder.watches(targetGvk, (o) => [objectKey(o)], {
      ...unlabelledNames(rule),
      predicates: [
        (d) => {
          if (d.type !== 'deleted') return false;
          const k = objectKey(d.object);
          if (this.index.sourcesOf(k).length > 0) this.leftNames.add(k);
          return true;
        },
      ],
    });
    this.controller = builder.reconcile(async (req, ctx) => {
      if (req.key.startsWith('!')) return this.reportName(req.key.slice(1));
      const target = await this.targetAt(req.key);
      // Our own write, not yet in the labelled cache: its event brings the key back (the
      // requeue covers an event that never comes).
      if (target === BEHIND) return { requeueAfterMs: OWN_WRITE_GRACE_MS };
      const decision = this.decide(req.key, target);
      ctx.log.debug({ action: decision.action }, 'decided');
      return this.carryOut(req.key, decision, ctx.log);
    });
  }

  /** Stops following the rule; its targets keep their last state (removing a rule is never a departure). */
  async stop(): Promise<void> {
    this.index.disposed = true;
    await this.manager.removeController(this.controller, 5_000);
    // Informers are counted (acquired), not pinned: one no rule uses any more stops, so a
    // namespace dropped from the rules (and from the chart's RBAC) is no longer listed or
    // watched, and a refused watch there never holds /readyz down.
    for (const off of this.unsubscribe) off();
    await Promise.all(
      [this.targets, this.names, ...this.sources.values()].map((r) => this.manager.cache.release(r)),
    );
  }

  /** The rule's labelled target cache (the metrics count from it). */
  get targetStore(): Store<KubeObject> {
    return this.targets.store;
  }

  private get targetGvk() {
    return { apiVersion: this.rule.target.apiVersion, kind: this.rule.target.kind };
  }

  /** The source informer that covers namespace `ns`: its own, or the rule's cluster-wide one. */
  private sourceStore(ns: string): Reflector<KubeObject> | undefined {
    return this.sources.get(ns) ?? this.sources.get(ALL_NAMESPACES);
  }

  private sourceObjects(targetKey: string): KubeObject[] {
    const out: KubeObject[] = [];
    for (const sk of this.index.sourcesOf(targetKey)) {
      const ns = sk.split('/')[0] ?? '';
      const o = this.sourceStore(ns)?.store.get(sk);
      if (o) out.push(o);
    }
    return out;
  }

  /**
   * The target at `key`: ours (or another rule's) from the labelled cache, with its spec;
   * else, when a source asks for one, whatever holds the name, from the names cache
   * (metadata only: enough to refuse an unlabelled target, which is never adopted). While
   * the names cache does not follow the server (its watch down), or when the name just
   * left it (see `leftNames`), a live read instead. {@link BEHIND} when we wrote a target there that the labelled cache has not received
   * yet: deciding without it would apply it again for nothing.
   */
  private async targetAt(key: string): Promise<KubeObject | undefined | typeof BEHIND> {
    // Before the labelled cache: it may hold an older version of a target we just wrote.
    if (this.writes.behind(key)) return BEHIND;
    const cached = this.targets.store.get(key);
    if (cached) {
      this.leftNames.delete(key);
      return cached;
    }
    if (this.index.sourcesOf(key).length === 0) return undefined;
    if (!this.names.watching || this.leftNames.delete(key)) {
      const [namespace, name] = key.split('/') as [string, string];
      return this.manager.client.find(this.targetGvk, name, namespace);
    }
    return this.names.store.get(key);
  }

  private decide(key: string, target: KubeObject | undefined): Decision {
    let recorded: KubeObject | undefined;
    if (target?.metadata.labels?.[LINK_LABEL] === this.rule.name) {
      const ref = parseSourceRef(this.rule, target.metadata.annotations?.['link.weebo.io/source']);
      if (ref) recorded = this.sourceStore(ref.namespace)?.store.get(`${ref.namespace}/${ref.name}`);
    }
    return decide(this.rule, { target, candidates: this.sourceObjects(key), recorded });
  }

  private async carryOut(
    key: string,
    d: Decision,
    log: { info: (o: object, m: string) => void; warn: (o: object, m: string) => void },
  ): Promise<ReconcileResult> {
    const link = this.rule.name;
    const fieldManager = fieldManagerOf(link);
    switch (d.action) {
      case 'Nothing':
        return {};
      case 'Apply': {
        const applied = await this.apply(d.target, fieldManager, d.source);
        log.info(
          { target: key, reason: d.reason, source: d.target.metadata.annotations?.[SOURCE_ANNOTATION] },
          'target applied',
        );
        if (d.reason === 'Reattach')
          this.manager.recorder.event(applied, {
            type: EventType.Normal,
            reason: 'Reattached',
            action: 'Apply',
            note: `linked to ${d.target.metadata.annotations?.[SOURCE_ANNOTATION]} (uid ${d.source.metadata.uid}) by link ${link}`,
          });
        // Adopting a target an admin labelled by hand is a gesture worth a trace on it.
        if (d.reason === 'Attach')
          this.manager.recorder.event(applied, {
            type: EventType.Normal,
            reason: 'Attached',
            action: 'Apply',
            note: `labelled by hand, now linked to ${d.target.metadata.annotations?.[SOURCE_ANNOTATION]} (uid ${d.source.metadata.uid}) by link ${link}`,
          });
        if (d.reason === 'Create') this.noticeLinked();
        return {};
      }
      case 'Detach': {
        const applied = await this.apply(d.target, fieldManager, undefined);
        log.info({ target: key, reason: d.reason }, 'source left: target Detaching');
        this.manager.recorder.event(applied, {
          type: EventType.Normal,
          reason: 'Detaching',
          action: 'Apply',
          note: `${d.reason}: onRemoval.patch applied; waiting for safe`,
        });
        return { requeueAfterMs: SAFE_RECHECK_MS };
      }
      case 'MarkDetached': {
        const applied = await this.apply(d.target, fieldManager, undefined);
        log.info({ target: key }, 'safe: target Detached and kept');
        this.manager.recorder.event(applied, {
          type: EventType.Normal,
          reason: 'Detached',
          action: 'Apply',
          note: 'safe state reached: kept, detached, and reattachable',
        });
        return {};
      }
      case 'Delete': {
        const [namespace, name] = key.split('/') as [string, string];
        try {
          // The UID precondition: an object recreated under the same name since the
          // decision (someone else's) answers 409 and is left alone.
          await this.manager.client.delete(this.targetGvk, name, namespace, { uid: d.uid });
        } catch (err) {
          if (isApiError(err, ApiErrorReason.NotFound)) {
            log.info({ target: key }, 'safe: target already gone (then: Delete)');
            return {};
          }
          if (isApiError(err, ApiErrorReason.Conflict)) {
            log.info({ target: key, uid: d.uid }, 'target replaced under the same name: not deleted');
            return {};
          }
          throw err;
        }
        log.info({ target: key }, 'safe: target deleted (then: Delete)');
        return {};
      }
      case 'Wait':
        return { requeueAfterMs: SAFE_RECHECK_MS };
      case 'Refuse':
        this.metrics.problems.labels(link, d.reason).inc();
        log.warn({ target: key, reason: d.reason, message: d.message }, 'refused');
        this.manager.recorder.event(d.regarding, {
          type: EventType.Warning,
          reason: d.reason,
          action: 'Link',
          note: `${link}: ${d.message}`,
        });
        return d.reason === 'SafeFailed' ? { requeueAfterMs: SAFE_RECHECK_MS } : {};
      default:
        return assertNever(d);
    }
  }

  /** Server-side apply with the rule's field manager; a refusal by the apiserver is reported, not retried blindly. */
  private async apply(
    obj: KubeObject,
    fieldManager: string,
    source: KubeObject | undefined,
  ): Promise<KubeObject> {
    const key = objectKey(obj);
    // Changes of this key seen until the answer are held, then looked at (own-writes.ts).
    this.writes.writing(key);
    let applied: KubeObject | undefined;
    try {
      applied = await this.manager.client.apply(obj, { fieldManager, force: true });
      return applied;
    } catch (err) {
      if (isApiError(err, ApiErrorReason.Invalid) || isApiError(err, ApiErrorReason.Forbidden)) {
        this.metrics.problems.labels(this.rule.name, 'ApplyRefused').inc();
        this.manager.recorder.event(source ?? obj, {
          type: EventType.Warning,
          reason: 'ApplyRefused',
          action: 'Apply',
          note: `${this.rule.name}: the apiserver refused ${obj.kind} ${objectKey(obj)}: ${(err as Error).message}`,
        });
        throw new TerminalError('ApplyRefused', (err as Error).message);
      }
      throw err;
    } finally {
      if (this.writes.answered(key, applied)) this.controller.queue.add(key);
    }
  }

  /**
   * A creation is one Normal `Linked` Event for the rule, on the rules ConfigMap, whose
   * series counts the targets created (the kit's recorder folds repeats: one write, then
   * at most one update per 30 s), not one Event per target: the target itself says it
   * (its `state: Linked` label and source annotations), and the RFC asks for Events on
   * refusals and departures, which stay per object.
   */
  private noticeLinked(): void {
    const cm = this.linkedNotice();
    if (!cm) return;
    this.manager.recorder.event(cm, {
      type: EventType.Normal,
      reason: 'Linked',
      action: 'Apply',
      note: `link ${this.rule.name}: ${this.rule.target.kind} created and linked to its ${this.rule.source.kind} (the count is in the series)`,
    });
  }

  /** A source whose target name cannot be evaluated: reported on the source, nothing written. */
  private reportName(sourceKey: string): ReconcileResult {
    const ns = sourceKey.split('/')[0] ?? '';
    const source = this.sourceStore(ns)?.store.get(sourceKey);
    if (!source) return {};
    const k = targetKeyOf(this.rule, source);
    if (k.ok) return {};
    this.metrics.problems.labels(this.rule.name, 'MappingFailed').inc();
    this.manager.recorder.event(source, {
      type: EventType.Warning,
      reason: 'MappingFailed',
      action: 'Link',
      note: `${this.rule.name}: ${k.message}`,
    });
    return {};
  }
}

/** One source namespace's informer options; `*` is one cluster-wide informer (no namespace). */
function sourceScope(ns: string): { namespace?: string } {
  return ns === ALL_NAMESPACES ? {} : { namespace: ns };
}

/** The labelled cache has yet to show our own write at this key. */
const BEHIND = Symbol('behind');

function assertNever(x: never): never {
  throw new Error(`unexpected ${JSON.stringify(x)}`);
}
