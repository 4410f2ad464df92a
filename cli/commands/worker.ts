import { installTemporalRuntime } from '../../worker/temporalRuntime';
import type { Config } from '../config';
import { freePort } from '../embedded/processes';
import { createLogger } from '../logger';
import { startTracing } from '../tracing';
import { startWorkerMetrics, startWorkerService } from '../workerService';
import { openRoleDatabase, reportReady, requiredAddresses, untilSignal } from './roleProcess';

/** `flightdeck worker`: a Temporal worker and the outbox relay only. */
export async function workerCommand(config: Config): Promise<void> {
  const { databaseUrl, temporalAddress } = requiredAddresses(config);
  const stopSignal = untilSignal();
  const logger = createLogger(config.logLevel);
  // With a metrics listener, the SDK's worker metrics join it from a loopback port of their own.
  const temporalSdkUrl = await installTemporalRuntime(
    logger,
    config.worker.metricsListener ? () => freePort() : undefined,
  );
  const metrics = await startWorkerMetrics({ config, logger, temporalSdkUrl });
  const tracing = await startTracing(config, 'flightdeck-worker');
  const { orm, secrets, close: closeDatabase } = await openRoleDatabase(config, databaseUrl, logger);
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
  await closeDatabase();
  await metrics?.close();
  await tracing?.shutdown();
}
