import { allTaskQueues } from '../../worker/taskQueues';
import { eventually } from './eventually';
import type { TestStack } from './stack';

type Settling = Pick<TestStack, 'orm' | 'temporal' | 'taskQueue'>;

/**
 * Activities that wait on another system (a push agent's service, a verification's probe): they
 * move a job's or a verification's status, never which records exist, and a fake remote may keep
 * them retrying for as long as a test likes, so they do not keep the stack from settling.
 */
const REMOTE_ACTIVITIES = new Set(['dispatchJob', 'followJob', 'measureHttpMetric']);

/**
 * Waits until the stack has nothing in flight that could still change what a test reads: no outbox
 * message undelivered, and no running workflow on the stack's task queues (its own and the drivers'
 * queues) with a workflow task (the database steps run in it), a child workflow or an
 * activity of ours (a rollout's) pending. A workflow waiting on its timer (a lease, a window, a
 * back-off) is settled: time is what it waits for. This is how a test shows that something did
 * *not* happen, instead of sleeping and hoping the work was done by then.
 *
 * Work passes from the outbox to Temporal and back (a relayed start makes a workflow task; an
 * activity writes the outbox), so one round reads the outbox, then the workflows, then the outbox
 * again, and the stack counts as settled after two quiet rounds in a row.
 */
export async function settled(
  stack: Settling,
  what = 'the stack to settle',
  timeoutMs = 30_000,
): Promise<void> {
  let quietRounds = 0;
  await eventually(
    async () => {
      const quiet =
        (await outboxIsEmpty(stack)) && (await workflowsAreIdle(stack)) && (await outboxIsEmpty(stack));
      quietRounds = quiet ? quietRounds + 1 : 0;
      return quietRounds >= 2;
    },
    { what, timeoutMs, intervalMs: 100 },
  );
}

async function outboxIsEmpty(stack: Settling): Promise<boolean> {
  const [row] = await stack.orm.em
    .fork()
    .getConnection()
    .execute<{ n: number }[]>('SELECT count(*)::int AS n FROM outbox');
  return row!.n === 0;
}

async function workflowsAreIdle(stack: Settling): Promise<boolean> {
  const running = stack.temporal.workflow.list({
    query: `(${allTaskQueues(stack.taskQueue)
      .map((queue) => `TaskQueue = '${queue}'`)
      .join(' OR ')}) AND ExecutionStatus = 'Running'`,
  });
  for await (const execution of running) {
    const { raw } = await stack.temporal.workflow.getHandle(execution.workflowId, execution.runId).describe();
    const ours = (raw.pendingActivities ?? []).filter(
      (activity) => !REMOTE_ACTIVITIES.has(activity.activityType?.name ?? ''),
    );
    if (raw.pendingWorkflowTask || ours.length > 0 || (raw.pendingChildren?.length ?? 0) > 0) return false;
  }
  return true;
}
