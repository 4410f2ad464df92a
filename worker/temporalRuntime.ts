import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import type { Logger } from 'pino';

const LEVELS = { TRACE: 'trace', DEBUG: 'debug', INFO: 'debug', WARN: 'warn', ERROR: 'error' } as const;

/**
 * Once per process, before any worker: the SDK logs through our logger (its chatty INFO lines at
 * debug), and it installs no signal handlers of its own, since our processes stop their parts in order.
 */
export function installTemporalRuntime(logger: Logger): void {
  const sdkLogger = logger.child({ component: 'temporal-sdk' });
  Runtime.install({
    shutdownSignals: [],
    logger: new DefaultLogger('DEBUG', (entry: LogEntry) => {
      // pino serializes errors under `err`; the SDK puts them under `error`.
      const { error, ...meta } = entry.meta ?? {};
      sdkLogger[LEVELS[entry.level]]({ ...meta, ...(error ? { err: error } : {}) }, entry.message);
    }),
  });
}
