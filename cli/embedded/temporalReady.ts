import { setTimeout as sleep } from 'node:timers/promises';
import { isAlive } from './processes';

/**
 * Waits for a Temporal server we started: `ready` runs until it succeeds, the server process dies,
 * or time runs out (then the last error is part of the message).
 */
export async function waitForTemporal(options: {
  pid: number;
  /** `The Temporal dev server`, for messages. */
  what: string;
  timeoutMs: number;
  pauseMs: number;
  ready: () => Promise<void>;
}): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (!isAlive(options.pid)) throw new Error(`${options.what} exited during start-up`);
    try {
      await options.ready();
      return;
    } catch (error) {
      lastError = error;
      await sleep(options.pauseMs);
    }
  }
  throw new Error(`${options.what} was not ready within ${options.timeoutMs / 1000} s: ${String(lastError)}`);
}
