import type { Logger } from 'pino';
import { createWorkerMetricsApp } from '../api/metricsListener';
import { listen, type ApiServer } from '../api/server';
import type { Database } from '../db/database';
import type { SecretBox } from '../db/secrets';
import { startWorkerRuntime, type WorkerRuntime } from '../worker/runtime';
import type { WorkflowSpans } from '../worker/tracing';
import type { Config } from './config';
import { processRegoEngine } from './opa';

/** The worker and outbox relay on the configured namespace and task queue. */
export function startWorkerService(options: {
  config: Config;
  orm: Database;
  secrets: SecretBox;
  databaseUrl: string;
  temporalAddress: string;
  logger: Logger;
  /** The process's span processor when tracing is on (cli/tracing.ts). */
  workflowSpans?: WorkflowSpans;
}): Promise<WorkerRuntime> {
  const { config } = options;
  return startWorkerRuntime({
    orm: options.orm,
    secrets: options.secrets,
    egress: config.egress,
    webhookEgress: config.webhooks.egress,
    webhookDeliveriesPerMinute: config.webhooks.deliveriesPerMinute,
    auditRetentionDays: config.auditRetentionDays,
    rego: processRegoEngine(),
    databaseUrl: options.databaseUrl,
    temporal: {
      address: options.temporalAddress,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
    },
    workflowCacheMb: config.temporal.workflowCacheMb,
    logger: options.logger.child({ component: 'worker' }),
    // The embedded dev server registers our search attributes at start; an external cluster may not have them.
    skipSearchAttributeRegistration: !config.temporal.address,
    workflowSpans: options.workflowSpans,
  });
}

/**
 * A worker's metrics listener (api/metricsListener.ts) on FLIGHTDECK_METRICS_HOST and _PORT, plain
 * HTTP: started only when FLIGHTDECK_METRICS_PORT is set for the worker (`flightdeck start` sets it
 * to a loopback port of its choosing).
 */
export async function startWorkerMetrics(options: {
  config: Config;
  logger: Logger;
  /** The Temporal SDK's exporter in this process (worker/temporalRuntime.ts). */
  temporalSdkUrl?: string;
}): Promise<ApiServer | undefined> {
  const { config } = options;
  const listener = config.worker.metricsListener;
  if (!listener) return undefined;
  const app = createWorkerMetricsApp({
    logger: options.logger.child({ component: 'worker' }),
    token: config.api.metrics.token,
    tenantLabels: config.api.metrics.tenantLabels,
    temporalSdkUrl: options.temporalSdkUrl,
  });
  return listen(app, listener.host, listener.port).catch((error: unknown) => {
    throw new Error(
      `The worker's metrics listener cannot listen on ${listener.host}:${listener.port} (${(error as Error).message}): ` +
        'set FLIGHTDECK_METRICS_PORT to a free port, or leave it unset',
    );
  });
}
