import { AggregatorRegistry, Registry, type Metric } from 'prom-client';
import { TENANT_LABELS } from '../db/domainMetrics';

type MetricJson = Awaited<ReturnType<Registry['getMetricsAsJSON']>>[number];

/**
 * What /metrics serves, gathered at each scrape: metrics as prom-client describes them (this
 * process's registries; a source is anything that answers them so, which is how another process's
 * metrics can join), then Prometheus text appended as it is (the Temporal SDK's exporter).
 */
export interface MetricsSources {
  metrics: (() => Promise<MetricJson[]>)[];
  texts: (() => Promise<string>)[];
  /** Keep the labels that tell workspaces apart (`TENANT_LABELS`); otherwise they are aggregated away. */
  tenantLabels: boolean;
}

/** How long /metrics waits for a Prometheus text exporter before leaving its figures out. */
const TEXT_SOURCE_TIMEOUT_MS = 2000;

/** The metrics an exporter serves in Prometheus' format (the Temporal SDK's); a comment when it does not answer. */
export async function prometheusText(url: string): Promise<string> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(TEXT_SOURCE_TIMEOUT_MS) });
    if (!response.ok) return `# ${url} unavailable: ${response.status}\n`;
    return await response.text();
  } catch {
    return `# ${url} unavailable\n`;
  }
}

export async function scrapeMetrics(sources: MetricsSources): Promise<{ contentType: string; text: string }> {
  const gathered = (await Promise.all(sources.metrics.map((source) => source()))).flat();
  const kept = sources.tenantLabels ? gathered : await withoutTenantLabels(gathered);
  const registry = new Registry();
  for (const metric of kept) {
    // As prom-client's own aggregation does: a metric that answers the values it was given.
    registry.registerMetric({ ...metric, get: async () => metric } as unknown as Metric);
  }
  const texts = await Promise.all(sources.texts.map((source) => source()));
  return { contentType: registry.contentType, text: [await registry.metrics(), ...texts].join('\n') };
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
