import { AggregatorRegistry, Registry, type Metric } from 'prom-client';
import { TENANT_LABELS } from '../engine/metrics';

export type MetricJson = Awaited<ReturnType<Registry['getMetricsAsJSON']>>[number];

/** A process's figures as its metrics listener hands them to another process (`/metrics.json`). */
export interface GatheredMetrics {
  /** As prom-client describes them, tenant labels included. */
  metrics: MetricJson[];
  /** Prometheus text, appended as it is. */
  texts: string[];
}

/**
 * What /metrics serves, gathered at each scrape: metrics as prom-client describes them (this
 * process's registries), Prometheus text appended as it is (the Temporal SDK's exporter), and the
 * figures of other processes of the service (the worker of `flightdeck start`), joined to these.
 */
export interface MetricsSources {
  metrics: (() => Promise<MetricJson[]>)[];
  texts: (() => Promise<string>)[];
  processes?: (() => Promise<GatheredMetrics>)[];
  /** Keep the labels that tell workspaces apart (`TENANT_LABELS`); otherwise they are aggregated away. */
  tenantLabels: boolean;
}

/** How long /metrics waits for an exporter or another process before leaving its figures out. */
const SOURCE_TIMEOUT_MS = 2000;

/** The metrics an exporter serves in Prometheus' format (the Temporal SDK's); a comment when it does not answer. */
export async function prometheusText(url: string): Promise<string> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(SOURCE_TIMEOUT_MS) });
    if (!response.ok) return `# ${url} unavailable: ${response.status}\n`;
    return await response.text();
  } catch {
    return `# ${url} unavailable\n`;
  }
}

/**
 * Another process's figures, from its metrics listener (`<url>/metrics.json`, with the metrics
 * token when there is one); when it does not answer in time, none, and a comment saying so.
 */
export async function processMetrics(url: string, token?: string): Promise<GatheredMetrics> {
  const where = `${url}/metrics.json`;
  const unavailable = (why: string) => ({ metrics: [], texts: [`# ${where} unavailable${why}\n`] });
  try {
    const response = await fetch(where, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      signal: AbortSignal.timeout(SOURCE_TIMEOUT_MS),
    });
    if (!response.ok) return unavailable(`: ${response.status}`);
    const body = (await response.json()) as Partial<GatheredMetrics>;
    if (!Array.isArray(body.metrics) || !Array.isArray(body.texts)) return unavailable(': not metrics');
    return { metrics: body.metrics, texts: body.texts };
  } catch {
    return unavailable('');
  }
}

/**
 * A source's metrics, copied as soon as they are read. prom-client answers a counter's live value
 * objects, which an event counted while the rest of the scrape awaits the database would change:
 * a scrape could then show a lease expiry without its reaper lag, observed together with it.
 */
async function snapshotOf(source: () => Promise<MetricJson[]>): Promise<MetricJson[]> {
  return structuredClone(await source());
}

/** Every source's figures, tenant labels included: what `/metrics.json` answers. */
export async function gatherMetrics(sources: MetricsSources): Promise<GatheredMetrics> {
  const [own, texts, others] = await Promise.all([
    Promise.all(sources.metrics.map(snapshotOf)),
    Promise.all(sources.texts.map((source) => source())),
    Promise.all((sources.processes ?? []).map((source) => source())),
  ]);
  return {
    metrics: await oneMetricPerName([...own.flat(), ...others.flatMap((other) => other.metrics)]),
    texts: [...texts, ...others.flatMap((other) => other.texts)],
  };
}

export async function scrapeMetrics(sources: MetricsSources): Promise<{ contentType: string; text: string }> {
  const gathered = await gatherMetrics(sources);
  const kept = sources.tenantLabels ? gathered.metrics : await withoutTenantLabels(gathered.metrics);
  const registry = new Registry();
  for (const metric of kept) {
    // As prom-client's own aggregation does: a metric that answers the values it was given.
    registry.registerMetric({ ...metric, get: async () => metric } as unknown as Metric);
  }
  return {
    contentType: registry.contentType,
    text: [await registry.metrics(), ...gathered.texts].join('\n'),
  };
}

/**
 * A metric several processes report (each counts the domain events that happen in it) becomes one,
 * its values combined by its aggregator (a sum unless it says otherwise); the others stay as they are.
 */
async function oneMetricPerName(metrics: MetricJson[]): Promise<MetricJson[]> {
  const count = new Map<string, number>();
  for (const metric of metrics) count.set(metric.name, (count.get(metric.name) ?? 0) + 1);
  const repeated = metrics.filter((metric) => count.get(metric.name)! > 1);
  if (repeated.length === 0) return metrics;
  const combined = await AggregatorRegistry.aggregate(repeated.map((metric) => [metric])).getMetricsAsJSON();
  return [...metrics.filter((metric) => count.get(metric.name) === 1), ...combined];
}

/**
 * The metrics with the tenant labels removed: the values they told apart are combined by each
 * metric's aggregator (a sum, the largest for ages). Metrics without them are left as they are.
 */
async function withoutTenantLabels(metrics: MetricJson[]): Promise<MetricJson[]> {
  const tenant = (labels: object) => Object.keys(labels).some((label) => TENANT_LABELS.includes(label));
  const labelled = metrics.filter((metric) => metric.values.some((value) => tenant(value.labels)));
  if (labelled.length === 0) return metrics;
  const stripped = labelled.map((metric) => ({
    ...metric,
    values: metric.values.map((value) => ({
      ...value,
      labels: Object.fromEntries(
        Object.entries(value.labels).filter(([label]) => !TENANT_LABELS.includes(label)),
      ),
    })),
  }));
  const combined = await AggregatorRegistry.aggregate([stripped]).getMetricsAsJSON();
  return [...metrics.filter((metric) => !labelled.includes(metric)), ...combined];
}
