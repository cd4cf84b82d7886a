/**
 * Metrics that several instances share on one prom-client registry: every controller's
 * workqueue reports `workqueue_depth`, every recorder its writes, each under its own
 * label. A registry refuses a second registration of a name, so the second instance
 * takes the metric the first registered ({@link sharedMetric}).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

type MetricClass = abstract new (...args: never[]) => object;

/**
 * The metric `name` from `registry` if it is registered there already, else the one
 * `create` makes, registered on `registry` (on none when `registry` is undefined, so
 * counting still works in code run without a metrics endpoint).
 *
 * @throws Error if `name` is registered with another type.
 */
export function sharedMetric<M extends object>(
  registry: Registry | undefined,
  name: string,
  type: MetricClass,
  create: (registers: Registry[]) => M,
): M {
  const existing = registry?.getSingleMetric(name);
  if (existing === undefined) return create(registry ? [registry] : []);
  // Same name and class: the same metric, registered by another instance with the same labels.
  if (existing instanceof type) return existing as M;
  throw new Error(`metric ${name} is already registered with another type; it cannot be shared`);
}

export function sharedCounter<L extends string>(
  registry: Registry | undefined,
  name: string,
  help: string,
  labelNames: readonly L[],
): Counter<L> {
  return sharedMetric(
    registry,
    name,
    Counter,
    (registers) => new Counter<L>({ name, help, labelNames, registers }),
  );
}

export function sharedGauge<L extends string>(
  registry: Registry | undefined,
  name: string,
  help: string,
  labelNames: readonly L[],
): Gauge<L> {
  return sharedMetric(
    registry,
    name,
    Gauge,
    (registers) => new Gauge<L>({ name, help, labelNames, registers }),
  );
}

export function sharedHistogram<L extends string>(
  registry: Registry | undefined,
  name: string,
  help: string,
  labelNames: readonly L[],
  buckets: readonly number[],
): Histogram<L> {
  return sharedMetric(
    registry,
    name,
    Histogram,
    (registers) => new Histogram<L>({ name, help, labelNames, buckets: [...buckets], registers }),
  );
}
