import { findOpa, OpaEngine } from './opa';
import fs from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import type { Logger } from 'pino';
import { createApp } from '../api/app';
import { createWorkerMetricsApp } from '../api/metricsListener';
import { listen, type ApiServer } from '../api/server';
import { pingDatabase, type Database } from '../db/database';
import type { SecretBox } from '../db/secrets';
import { startWorkerRuntime, type WorkerRuntime } from '../worker/runtime';
import type { WorkflowSpans } from '../worker/tracing';
import type { Config } from './config';
import { storesWithFaults } from './faults';
import { flightdeckVersion } from './version';

let engine: OpaEngine | undefined;

/** The process's Rego engine: the `opa` binary found now (FLIGHTDECK_OPA_PATH, the cache, PATH), if any. */
function regoEngine(): OpaEngine {
  engine ??= new OpaEngine(findOpa());
  return engine;
}

export interface ApiService {
  url: string;
  /** The metrics listener's URL (unless FLIGHTDECK_METRICS_PORT is off). */
  metricsUrl?: string;
  /** Whether the API's port serves /metrics too, behind the metrics or admin token. */
  metricsOnApiPort: boolean;
  temporal: Client;
  close(): Promise<void>;
}

/**
 * The HTTP API on its own Temporal connection (for readiness and workflow queries), and /metrics
 * on a listener of its own (FLIGHTDECK_METRICS_HOST and _PORT, 127.0.0.1:9464 by default; the
 * API's TLS), including a worker's figures when FLIGHTDECK_WORKER_METRICS_URL names its listener.
 */
export async function startApiService(options: {
  config: Config;
  orm: Database;
  secrets: SecretBox;
  temporalAddress: string;
  logger: Logger;
  /** The Temporal UI, linked from the rollout board. */
  temporalUiUrl?: string;
}): Promise<ApiService> {
  const { config, orm, logger } = options;
  const connection = await Connection.connect({ address: options.temporalAddress });
  const temporal = new Client({ connection, namespace: config.temporal.namespace });
  const { app, metricsApp } = createApp({
    orm,
    secrets: options.secrets,
    logger: logger.child({ component: 'api' }),
    bodyLimit: config.api.bodyLimit,
    adminToken: config.api.adminToken,
    metrics: {
      token: config.api.metrics.token,
      tenantLabels: config.api.metrics.tenantLabels,
      workerUrl: config.api.metrics.workerUrl,
    },
    transport: config.api.transport,
    rego: regoEngine(),
    ...(options.temporalUiUrl
      ? { temporalUi: { url: options.temporalUiUrl, namespace: config.temporal.namespace } }
      : {}),
    decorateStores: storesWithFaults(config.api.faults),
    policySkips: config.api.policySkips,
    version: flightdeckVersion(),
    readiness: {
      postgres: () => pingDatabase(orm),
      temporal: async () => {
        await connection.workflowService.getSystemInfo({});
      },
    },
  });
  let server: ApiServer | undefined;
  let metricsServer: ApiServer | undefined;
  try {
    const tls = config.api.tls && {
      cert: fs.readFileSync(config.api.tls.certFile),
      key: fs.readFileSync(config.api.tls.keyFile),
    };
    server = await listen(app, config.api.host, config.api.port, tls);
    const { listener } = config.api.metrics;
    if (listener) {
      metricsServer = await listen(metricsApp, listener.host, listener.port, tls).catch((error: unknown) => {
        throw new Error(
          `The metrics listener cannot listen on ${listener.host}:${listener.port} (${(error as Error).message}): ` +
            'set FLIGHTDECK_METRICS_PORT to a free port, or to off',
        );
      });
    }
  } catch (error) {
    await server?.close();
    await connection.close();
    throw error;
  }
  const api = server;
  return {
    url: config.api.publicUrl ?? api.url,
    metricsUrl: metricsServer?.url,
    metricsOnApiPort: Boolean(config.api.metrics.token ?? config.api.adminToken),
    temporal,
    close: async () => {
      await Promise.all([api.close(), metricsServer?.close()]);
      await connection.close();
    },
  };
}

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
    auditRetentionDays: config.auditRetentionDays,
    rego: regoEngine(),
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
