import type { Logger } from 'pino';
import { startApiService, type ApiService } from '../apiService';
import type { Config } from '../config';
import { createLogger } from '../logger';
import { startTracing } from '../tracing';
import { openRoleDatabase, requiredAddresses, untilSignal } from './roleProcess';

/** `flightdeck api`: the HTTP API only. */
export async function apiCommand(config: Config): Promise<void> {
  // From the first moment: a stop asked for during start-up is a clean stop once it is done.
  const stopSignal = untilSignal();
  const logger = createLogger(config.logLevel);
  const api = await serveApi(config, logger);
  const signal = await stopSignal;
  logger.info({ signal }, 'stopping API');
  await api.close();
}

/** Where the API serves, for `flightdeck start`'s banner. */
export interface ApiReady {
  url: string;
  metricsUrl?: string;
  metricsOnApiPort: boolean;
}

/**
 * The API role: its tracing, its database and its listeners, as `flightdeck api` runs it and as
 * `flightdeck start` runs it in its own process (cli/commands/start.ts). `close` ends all three.
 */
export async function serveApi(
  config: Config,
  logger: Logger,
): Promise<{ ready: ApiReady; close(): Promise<void> }> {
  const { databaseUrl, temporalAddress } = requiredAddresses(config);
  const tracing = await startTracing(config, 'flightdeck-api');
  const { orm, secrets, close: closeDatabase } = await openRoleDatabase(config, databaseUrl, logger);
  let api: ApiService;
  try {
    api = await startApiService({
      config,
      orm,
      secrets,
      temporalAddress,
      logger,
      temporalUiUrl: config.temporal.uiUrl,
    });
  } catch (error) {
    await closeDatabase();
    await tracing?.shutdown();
    throw error;
  }
  logger.info({ url: api.url, metricsUrl: api.metricsUrl }, 'API listening');
  return {
    ready: { url: api.url, metricsUrl: api.metricsUrl, metricsOnApiPort: api.metricsOnApiPort },
    close: async () => {
      await api.close();
      await closeDatabase();
      await tracing?.shutdown();
    },
  };
}
