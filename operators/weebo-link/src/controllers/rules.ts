/**
 * The rules controller: reads the ConfigMap `weebo-link-rules`, compiles its rules,
 * checks each against discovery, and keeps one {@link LinkRuntime} per valid rule.
 *
 * - An invalid rule is refused alone (Event on the ConfigMap, `weebo_link_links_rule_errors{link}`
 *   set to 1, a log line); the others keep running.
 * - A document that cannot be read (malformed YAML) refuses nothing that runs: the rules
 *   loaded before keep running, and the error is reported with `link="(configmap)"`.
 * - A changed rule restarts its runtime; a removed rule stops its runtime and triggers
 *   nothing on its targets (they keep their last state; `weebo_link_links_orphan_targets`
 *   counts them).
 * - Discovery is checked again at every resync, so a target CRD removed while running
 *   refuses its rule (and a CRD back restores it), without touching any target.
 */
import { ApiErrorReason, EventType, isApiError, type KubeObject, type Manager } from '@operators/kit';
import { type CompiledRules, loadRules, type Rule, type RuleError } from '../domain/index.ts';
import { LinkRuntime } from './link.ts';
import { type LinkMetrics, linkMetrics } from './metrics.ts';

export const RULES_CONFIGMAP = 'weebo-link-rules';
/** The key of the ConfigMap that holds the `links:` document. */
export const RULES_KEY = 'links.yaml';
export const DOCUMENT_ERROR_LABEL = '(configmap)';

export interface RulesOptions {
  readonly manager: Manager;
  readonly namespace: string;
  readonly configMap?: string;
  /** Full resync of every target, and re-check of discovery (5 min by default, as the kit's steady requeue). */
  readonly resyncMs?: number;
  readonly concurrency?: number;
}

const CONFIGMAP = { apiVersion: 'v1', kind: 'ConfigMap' } as const;

/** Checks what only the cluster knows: both kinds served, namespaced, under the plural the RBAC names. */
export async function checkDiscovery(
  manager: Pick<Manager, 'client'>,
  rule: Rule,
  refresh = true,
): Promise<string[]> {
  const problems: string[] = [];
  for (const [where, ref] of [
    ['source', rule.source],
    ['target', rule.target],
  ] as const) {
    if (refresh) manager.client.discovery.invalidate(ref.apiVersion);
    try {
      const info = await manager.client.resolve({ apiVersion: ref.apiVersion, kind: ref.kind });
      if (!info.namespaced)
        problems.push(`${where}: ${ref.kind} is cluster-scoped; links join namespaced kinds`);
      if (info.resource !== ref.resource)
        problems.push(
          `${where}: ${ref.kind} is served as ${info.resource}, not ${ref.resource}: set ${where}.resource: ${info.resource} (the chart's RBAC and policies use it)`,
        );
    } catch (err) {
      if (isApiError(err, ApiErrorReason.NotFound))
        problems.push(
          `${where}: ${ref.apiVersion} ${ref.kind} is not served by the cluster (is its CRD installed?)`,
        );
      else throw err;
    }
  }
  return problems;
}

export class RulesController {
  private readonly opts: RulesOptions;
  private readonly manager: Manager;
  private readonly running = new Map<string, LinkRuntime>();
  private readonly metrics: LinkMetrics;
  private readonly reported = new Set<string>();
  private readonly configMap: () => KubeObject | undefined;

  constructor(opts: RulesOptions) {
    this.opts = opts;
    this.manager = opts.manager;
    this.metrics = linkMetrics(
      this.manager.registry,
      // The running rules' target caches (one per kind and namespace, shared), synced ones
      // only: a rule just loaded has its cache filling, and a scrape must not fail for it.
      () => new Set([...this.running.values()].map((r) => r.targetStore).filter((st) => st.hasSynced())),
      () => new Set(this.running.keys()),
    );
    const name = opts.configMap ?? RULES_CONFIGMAP;
    const c = this.manager
      .controller('rules')
      .for(CONFIGMAP, { namespace: opts.namespace, fieldSelector: `metadata.name=${name}` })
      .reconcile(async () => {
        const cm = this.configMap();
        await this.load(cm);
        return { requeueAfterMs: this.opts.resyncMs ?? 300_000 };
      });
    this.configMap = () => c.primary.store.get(`${opts.namespace}/${name}`);
  }

  /** The rules running now, by name. */
  get rules(): ReadonlyMap<string, LinkRuntime> {
    return this.running;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.running.values()].map((r) => r.stop()));
    this.running.clear();
  }

  private async load(cm: KubeObject | undefined): Promise<void> {
    const log = this.manager.log.child({ controller: 'rules' });
    const text = (cm?.data as Record<string, string> | undefined)?.[RULES_KEY] ?? '';
    const compiled: CompiledRules & { documentError?: string } = cm
      ? loadRules(text)
      : { rules: [], errors: [] };
    if (!cm)
      log.warn({ configMap: this.opts.configMap ?? RULES_CONFIGMAP }, 'no rules ConfigMap: no rule runs');
    if (compiled.documentError) {
      this.metrics.ruleErrors.labels(DOCUMENT_ERROR_LABEL).set(1);
      log.error(
        { error: compiled.documentError },
        'rules document refused: the rules loaded before keep running',
      );
      if (cm)
        this.manager.recorder.event(cm, {
          type: EventType.Warning,
          reason: 'RulesRefused',
          action: 'Load',
          note: `${RULES_KEY}: ${compiled.documentError}`,
        });
      return;
    }
    this.metrics.ruleErrors.labels(DOCUMENT_ERROR_LABEL).set(0);

    const errors: RuleError[] = [...compiled.errors];
    const valid: Rule[] = [];
    for (const rule of compiled.rules) {
      const problems = await checkDiscovery(this.manager, rule);
      if (problems.length) errors.push({ link: rule.name, problems });
      else valid.push(rule);
    }

    const seen = new Set<string>();
    for (const e of errors) {
      seen.add(e.link);
      this.metrics.ruleErrors.labels(e.link).set(1);
      log.error({ link: e.link, problems: e.problems }, 'rule refused: the other rules keep running');
      if (cm)
        this.manager.recorder.event(cm, {
          type: EventType.Warning,
          reason: 'RuleRefused',
          action: 'Load',
          note: `link ${e.link}: ${e.problems.join('; ')}`,
        });
      // A refused rule stops running; its targets keep their last state.
      const old = this.running.get(e.link);
      if (old) {
        this.running.delete(e.link);
        await old.stop();
      }
    }
    for (const rule of valid) {
      seen.add(rule.name);
      this.metrics.ruleErrors.labels(rule.name).set(0);
      const old = this.running.get(rule.name);
      if (old && JSON.stringify(old.rule.raw) === JSON.stringify(rule.raw)) continue;
      if (old) await old.stop();
      const runtime = new LinkRuntime({
        manager: this.manager,
        rule,
        metrics: this.metrics,
        resyncMs: this.opts.resyncMs ?? 300_000,
        concurrency: this.opts.concurrency ?? 8,
        linkedNotice: this.configMap,
      });
      this.running.set(rule.name, runtime);
      log.info({ link: rule.name }, old ? 'rule changed: restarted' : 'rule loaded');
      if (cm)
        this.manager.recorder.event(cm, {
          type: EventType.Normal,
          reason: 'RuleLoaded',
          action: 'Load',
          note: `link ${rule.name}: ${rule.source.kind} in ${rule.source.namespaces.join(', ')} → ${rule.target.kind} in ${rule.target.namespace}`,
        });
    }
    for (const [name, runtime] of [...this.running]) {
      if (seen.has(name)) continue;
      this.running.delete(name);
      await runtime.stop();
      log.info({ link: name }, 'rule removed: its targets keep their last state');
    }
    for (const name of this.reported) if (!seen.has(name)) this.metrics.ruleErrors.remove(name);
    this.reported.clear();
    for (const n of seen) this.reported.add(n);
  }
}
