/**
 * The task queues beside the configured one (releases and runbook runs: thousands of workflows
 * after a fan-out), each served by a worker of its own (worker/runtime.ts), so that no driver waits
 * behind the work it drives nor behind another driver's:
 * - rollouts (version and target rollouts), which create the releases;
 * - leases, one per claim, a thousand at once when agents are busy: a version's rollout waited
 *   two minutes behind their tasks when both shared a queue (bench/trailing.ts);
 * - webhook deliveries (`webhookTaskQueue`).
 */
export function rolloutTaskQueue(taskQueue: string): string {
  return `${taskQueue}-rollout`;
}

/**
 * The leases' queue keeps the name it had when rollouts shared it: leases (and rollouts) already
 * running there finish on it, since every worker serves every workflow type.
 */
export function leaseTaskQueue(taskQueue: string): string {
  return `${taskQueue}-control`;
}

/**
 * Webhook deliveries: their attempts wait on tenants' receivers, up to a request's timeout each, so
 * they take a few slots of their own (worker/tuning.ts) and never the releases'; deliveries that
 * were started on the configured queue before they had this one finish there.
 */
export function webhookTaskQueue(taskQueue: string): string {
  return `${taskQueue}-webhooks`;
}

/** Every task queue of a deployment of Flightdeck whose configured queue is `taskQueue`. */
export function allTaskQueues(taskQueue: string): string[] {
  return [taskQueue, rolloutTaskQueue(taskQueue), leaseTaskQueue(taskQueue), webhookTaskQueue(taskQueue)];
}
