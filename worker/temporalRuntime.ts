import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import type { Logger } from 'pino';

const LEVELS = { TRACE: 'trace', DEBUG: 'debug', INFO: 'debug', WARN: 'warn', ERROR: 'error' } as const;

/** Ports tried for the SDK's metrics before giving up (see `installTemporalRuntime`). */
const METRICS_PORT_ATTEMPTS = 5;

/**
 * Once per process, before any worker: the SDK logs through our logger (its chatty INFO lines at
 * debug), and it installs no signal handlers of its own, since our processes stop their parts in order.
 * With `pickMetricsPort`, the SDK's worker metrics (task slots, polls, latencies; `temporal_…`) are
 * served in Prometheus' format on a loopback port it picks, which the API's /metrics appends
 * (`sdkMetricsUrl`); answers the URL. A free port can be taken by another process before the SDK
 * binds it: then another is picked.
 */
export async function installTemporalRuntime(
  logger: Logger,
  pickMetricsPort?: () => Promise<number>,
): Promise<string | undefined> {
  const sdkLogger = logger.child({ component: 'temporal-sdk' });
  const install = (bindAddress?: string) =>
    Runtime.install({
      shutdownSignals: [],
      ...(bindAddress
        ? {
            telemetryOptions: {
              metrics: {
                prometheus: { bindAddress, countersTotalSuffix: true, useSecondsForDurations: true },
              },
            },
          }
        : {}),
      logger: new DefaultLogger('DEBUG', (entry: LogEntry) => {
        // pino serializes errors under `err`; the SDK puts them under `error`.
        const { error, ...meta } = entry.meta ?? {};
        sdkLogger[LEVELS[entry.level]]({ ...meta, ...(error ? { err: error } : {}) }, entry.message);
      }),
    });
  if (!pickMetricsPort) {
    install();
    return undefined;
  }
  for (let attempt = 1; ; attempt++) {
    const bindAddress = `127.0.0.1:${await pickMetricsPort()}`;
    try {
      install(bindAddress);
      return `http://${bindAddress}/metrics`;
    } catch (error) {
      if (attempt >= METRICS_PORT_ATTEMPTS || !/address already in use/i.test(String(error))) throw error;
      sdkLogger.debug({ bindAddress }, 'the metrics port was taken before the SDK bound it; picking another');
    }
  }
}
