import { openDatabase } from '../../db/database';
import { followLegacySealRetirement } from '../../db/legacySeals';
import { installTemporalRuntime } from '../../worker/temporalRuntime';
import type { Config } from '../config';
import type { RoleReady } from '../embedded/roles';
import { freePort } from '../embedded/processes';
import { createLogger } from '../logger';
import { startApiService, startWorkerMetrics, startWorkerService } from '../services';
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

/**
 * When `flightdeck start` runs this process (cli/embedded/roles.ts), tells it that the role serves,
 * then closes the channel, which would otherwise keep the process alive after its stop.
 */
function reportReady(ready: RoleReady): void {
  if (process.send && process.connected) process.send(ready, undefined, {}, () => process.disconnect?.());
}

export async function apiCommand(config: Config): Promise<void> {
  const { databaseUrl, temporalAddress } = required(config);
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

export async function workerCommand(config: Config): Promise<void> {
  const { databaseUrl, temporalAddress } = required(config);
  const stopSignal = untilSignal();
  const logger = createLogger(config.logLevel);
  // With a metrics listener, the SDK's worker metrics join it from a loopback port of their own.
  const temporalSdkUrl = await installTemporalRuntime(
    logger,
    config.worker.metricsListener ? () => freePort() : undefined,
  );
  const metrics = await startWorkerMetrics({ config, logger, temporalSdkUrl });
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
  if (metrics) logger.info({ metricsUrl: metrics.url }, 'worker metrics listening');
  reportReady({ role: 'worker', metricsUrl: metrics?.url });
  const reason = await Promise.race([
    stopSignal,
    worker.done.then(
      () => 'worker stopped',
      (error: unknown) => {
        // Stopped all the same, so the process exits and whoever runs it sees the failure.
        logger.error({ err: error }, 'worker crashed');
        process.exitCode = 1;
        return 'worker crashed';
      },
    ),
  ]);
  logger.info({ reason }, 'stopping worker');
  await worker.stop();
  legacySeals.stop();
  await orm.close();
  await metrics?.close();
  await tracing?.shutdown();
}
