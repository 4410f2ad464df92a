import type { ActivityInterceptorsFactory } from '@temporalio/worker';

/** How often a running activity tells Temporal it is alive; well inside the workflows' HEARTBEAT_TIMEOUT. */
const HEARTBEAT_INTERVAL_MS = 2_000;

/**
 * Every ordinary (not local) activity heartbeats while it runs. With the heartbeat timeout the
 * workflows set (`HEARTBEAT_TIMEOUT`), Temporal notices a worker that died mid-activity within
 * seconds and retries the activity elsewhere, instead of waiting out its start-to-close timeout.
 * Local activities are skipped: they live and die with their workflow task.
 */
export const activityHeartbeats: ActivityInterceptorsFactory = (context) => ({
  inbound: {
    async execute(input, next) {
      if (context.info.isLocal) return next(input);
      // The first heartbeat comes after one interval: most activities end sooner, and a heartbeat
      // at the start would only cost them a call to the server.
      const timer = setInterval(() => context.heartbeat(), HEARTBEAT_INTERVAL_MS);
      try {
        return await next(input);
      } finally {
        clearInterval(timer);
      }
    },
  },
});
