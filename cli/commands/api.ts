import { startApiService } from '../apiService';
import type { Config } from '../config';
import { createLogger } from '../logger';
import { startTracing } from '../tracing';
import { openRoleDatabase, reportReady, requiredAddresses, untilSignal } from './roleProcess';

/** `flightdeck api`: the HTTP API only. */
export async function apiCommand(config: Config): Promise<void> {
  const { databaseUrl, temporalAddress } = requiredAddresses(config);
  // From the first moment: a stop asked for during start-up is a clean stop once it is done.
  const stopSignal = untilSignal();
  const logger = createLogger(config.logLevel);
  const tracing = startTracing(config, 'flightdeck-api');
  const { orm, secrets, close: closeDatabase } = await openRoleDatabase(config, databaseUrl, logger);
  const api = await startApiService({
    config,
    orm,
    secrets,
    temporalAddress,
    logger,
    temporalUiUrl: config.temporal.uiUrl,
  });
  logger.info({ url: api.url, metricsUrl: api.metricsUrl }, 'API listening');
  reportReady({
    role: 'api',
    url: api.url,
    metricsUrl: api.metricsUrl,
    metricsOnApiPort: api.metricsOnApiPort,
  });
  const signal = await stopSignal;
  logger.info({ signal }, 'stopping API');
  await api.close();
  await closeDatabase();
  await tracing?.shutdown();
}
