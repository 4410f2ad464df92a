import { Context } from '@temporalio/activity';

/** How often a running activity tells Temporal it is alive; well inside HEARTBEAT_TIMEOUT of the workflows. */
const HEARTBEAT_INTERVAL_MS = 2_000;

/**
 * Runs an ordinary (not local) activity's work while heartbeating. With a heartbeat timeout on the
 * workflow side, Temporal notices a worker that died mid-activity within seconds and retries the
 * activity elsewhere, instead of waiting out its whole start-to-close timeout.
 */
export async function heartbeating<T>(work: () => Promise<T>): Promise<T> {
  const context = Context.current();
  context.heartbeat();
  const timer = setInterval(() => context.heartbeat(), HEARTBEAT_INTERVAL_MS);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
