import { proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';

/**
 * The database steps of the workflows that own jobs (a release's, a runbook run's) and of a rollout
 * in waves: short and idempotent, so local activities, run by the worker that runs the workflow and
 * recorded in its history as markers, without a round trip to the server each.
 */
export const databaseSteps = proxyLocalActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});
