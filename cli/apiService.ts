import fs from 'node:fs';
import type { Logger } from 'pino';
import { createApp } from '../api/app';
import { storeFactory, type StoreFactory } from '../application';
import { listen, type ApiServer } from '../api/server';
import { pingDatabase, type Database } from '../db/database';
import type { SecretBox } from '../db/secrets';
import type { Config } from './config';
import { processRegoEngine } from './opa';
import { TemporalHealth } from './temporalHealth';
import { flightdeckVersion } from './version';

/** /readyz gives each dependency 3 s (api/routes/system.ts): the health check ends with it. */
const READINESS_TIMEOUT_MS = 3_000;

export interface ApiService {
  url: string;
  /** The metrics listener's URL (unless FLIGHTDECK_METRICS_PORT is off). */
  metricsUrl?: string;
  /** Whether the API's port serves /metrics too, behind the metrics or admin token. */
  metricsOnApiPort: boolean;
  close(): Promise<void>;
}

/** The stores the API's requests get, as the configuration sets them. */
export function apiStores(config: Config, orm: Database, secrets: SecretBox): StoreFactory {
  return storeFactory(orm, {
    secrets,
    rego: processRegoEngine(),
    skipLifetimes: config.api.policySkips,
    webhookDeliveriesPerMinute: config.webhooks.deliveriesPerMinute,
  });
}

/**
 * The HTTP API, asking Temporal's frontend only whether it serves (for /readyz), and /metrics
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
  /** Each request's stores (default: `apiStores`). */
  stores?: StoreFactory;
}): Promise<ApiService> {
  const { config, orm, logger } = options;
  const temporal = new TemporalHealth(options.temporalAddress);
  const { app, metricsApp } = createApp({
    stores: options.stores ?? apiStores(config, orm, options.secrets),
    orm,
    logger: logger.child({ component: 'api' }),
    bodyLimit: config.api.bodyLimit,
    adminToken: config.api.adminToken,
    metrics: {
      token: config.api.metrics.token,
      tenantLabels: config.api.metrics.tenantLabels,
      workerUrl: config.api.metrics.workerUrl,
    },
    transport: config.api.transport,
    ...(options.temporalUiUrl
      ? { temporalUi: { url: options.temporalUiUrl, namespace: config.temporal.namespace } }
      : {}),
    version: flightdeckVersion(),
    readiness: {
      postgres: () => pingDatabase(orm),
      temporal: () => temporal.check(READINESS_TIMEOUT_MS),
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
    temporal.close();
    throw error;
  }
  const api = server;
  return {
    url: config.api.publicUrl ?? api.url,
    metricsUrl: metricsServer?.url,
    metricsOnApiPort: Boolean(config.api.metrics.token ?? config.api.adminToken),
    close: async () => {
      await Promise.all([api.close(), metricsServer?.close()]);
      temporal.close();
    },
  };
}
