import { openDatabase } from '../../db/database';
import { followLegacySealRetirement } from '../../db/legacySeals';
import { startApiService } from '../apiService';
import type { Config } from '../config';
import { createLogger } from '../logger';
import { secretBoxFor } from '../state';
import { startTracing } from '../tracing';
import { reportReady, requiredAddresses, untilSignal } from './roleProcess';

/** `flightdeck api`: the HTTP API only. */
export async function apiCommand(config: Config): Promise<void> {
  const { databaseUrl, temporalAddress } = requiredAddresses(config);
  // From the first moment: a stop asked for during start-up is a clean stop once it is done.
  const stopSignal = untilSignal();
  const secrets = secretBoxFor(config, { generate: false });
  const logger = createLogger(config.logLevel);
  const tracing = startTracing(config, 'flightdeck-api');
  const orm = await openDatabase({ url: databaseUrl, poolMax: config.database.poolMax });
  const legacySeals = await followLegacySealRetirement(orm, secrets, {
    onError: (err) => logger.warn({ err }, 'cannot read whether legacy sealed values are retired'),
  });
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
  legacySeals.stop();
  await orm.close();
  await tracing?.shutdown();
}
