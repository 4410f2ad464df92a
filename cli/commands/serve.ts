import { openDatabase } from '../../db/database';
import { followLegacySealRetirement } from '../../db/legacySeals';
import { installTemporalRuntime } from '../../worker/temporalRuntime';
import type { Config } from '../config';
import { createLogger } from '../logger';
import { startApiService, startWorkerService } from '../services';
import { secretBoxFor } from '../state';
import { startTracing } from '../tracing';

/** `flightdeck api` and `flightdeck worker`: one role per process, for running several of each. */

function required(config: Config): { databaseUrl: string; temporalAddress: string } {
  const missing = [
    config.database.url ? undefined : 'DATABASE_URL',
    config.temporal.address ? undefined : 'TEMPORAL_ADDRESS',
  ].filter(Boolean);
  if (missing.length > 0) {
    throw new Error(
      `${missing.join(' and ')} must be set (use \`flightdeck start\` for the embedded stack).`,
    );
  }
  return { databaseUrl: config.database.url!, temporalAddress: config.temporal.address! };
}

function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
}

export async function apiCommand(config: Config): Promise<void> {
  const { databaseUrl, temporalAddress } = required(config);
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
  const signal = await untilSignal();
  logger.info({ signal }, 'stopping API');
  await api.close();
  legacySeals.stop();
  await orm.close();
  await tracing?.shutdown();
}

export async function workerCommand(config: Config): Promise<void> {
  const { databaseUrl, temporalAddress } = required(config);
  const logger = createLogger(config.logLevel);
  installTemporalRuntime(logger);
  const tracing = startTracing(config, 'flightdeck-worker');
  const orm = await openDatabase({ url: databaseUrl, poolMax: config.database.poolMax });
  const secrets = secretBoxFor(config, { generate: false });
  const legacySeals = await followLegacySealRetirement(orm, secrets, {
    onError: (err) => logger.warn({ err }, 'cannot read whether legacy sealed values are retired'),
  });
  const worker = await startWorkerService({
    config,
    orm,
    secrets,
    databaseUrl,
    temporalAddress,
    logger,
    workflowSpans: tracing?.workflowSpans,
  });
  const reason = await Promise.race([untilSignal(), worker.done.then(() => 'worker stopped')]);
  logger.info({ reason }, 'stopping worker');
  await worker.stop();
  legacySeals.stop();
  await orm.close();
  await tracing?.shutdown();
}
