import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import type { Logger } from 'pino';

const LEVELS = { TRACE: 'trace', DEBUG: 'debug', INFO: 'debug', WARN: 'warn', ERROR: 'error' } as const;

/**
 * Once per process, before any worker: the SDK logs through our logger (its chatty INFO lines at
 * debug), and it installs no signal handlers of its own, since our processes stop their parts in order.
 * With `metricsPort`, the SDK's worker metrics (task slots, polls, latencies; `temporal_…`) are
 * served in Prometheus' format on that loopback port, which the API's /metrics appends
 * (`sdkMetricsUrl`); answers the URL.
 */
export function installTemporalRuntime(logger: Logger, metricsPort?: number): string | undefined {
  const sdkLogger = logger.child({ component: 'temporal-sdk' });
  const bindAddress = metricsPort ? `127.0.0.1:${metricsPort}` : undefined;
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
  return bindAddress ? `http://${bindAddress}/metrics` : undefined;
}
