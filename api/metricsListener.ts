import Koa from 'koa';
import type Router from '@koa/router';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { domainEvents } from '../engine/metrics';
import { requestContext } from './middleware/requestContext';
import { problemMiddleware } from './middleware/problem';
import { gatherMetrics, prometheusText, scrapeMetrics, type MetricsSources } from './metricsScrape';
import type { AppState } from './context';
import { metricsRouter } from './routes/metrics';

/**
 * The metrics listener of a worker process: its process figures (named `flightdeck_worker_…`, so
 * they stand beside the API's own), the domain events counted in it (lease expiries, fan-outs) and
 * the Temporal SDK's worker metrics. /metrics serves them to Prometheus; /metrics.json to the API
 * of `flightdeck start`, which includes them in its own /metrics.
 */
export function createWorkerMetricsApp(options: {
  logger: Logger;
  /** FLIGHTDECK_METRICS_TOKEN: both routes need it as `Authorization: Bearer`. */
  token?: string;
  tenantLabels: boolean;
  /** The Temporal SDK's exporter in this process (worker/temporalRuntime.ts). */
  temporalSdkUrl?: string;
}): Koa<AppState> {
  const processFigures = new Registry();
  collectDefaultMetrics({ register: processFigures, prefix: 'flightdeck_worker_' });
  const sdkUrl = options.temporalSdkUrl;
  const sources: MetricsSources = {
    metrics: [() => processFigures.getMetricsAsJSON(), () => domainEvents.getMetricsAsJSON()],
    texts: sdkUrl ? [() => prometheusText(sdkUrl)] : [],
    tenantLabels: options.tenantLabels,
  };
  const router = metricsRouter(
    () => scrapeMetrics(sources),
    options.token ? [options.token] : [],
    () => gatherMetrics(sources),
  );
  return metricsListenerApp(options.logger, router);
}

/** The app of a metrics listener: the metrics routes and nothing else, errors as problem+json. */
export function metricsListenerApp(logger: Logger, scrape: Router<AppState>): Koa<AppState> {
  const app = new Koa<AppState>();
  app.proxy = true;
  app.silent = true;
  app.use(requestContext(logger.child({ listener: 'metrics' })));
  app.use(problemMiddleware());
  app.use(scrape.routes()).use(scrape.allowedMethods({ throw: true }));
  return app;
}
