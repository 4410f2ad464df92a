/**
 * The task queue of the work that drives the rest — version and target rollouts, leases — beside
 * the configured one (releases, workflow runs): its own worker serves it (worker/runtime.ts), so a
 * rollout never waits behind the thousands of release workflows it has just started, nor a lease's
 * sweep behind a fan-out.
 */
export function controlTaskQueue(taskQueue: string): string {
  return `${taskQueue}-control`;
}
