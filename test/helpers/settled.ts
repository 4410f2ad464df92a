import { eventually } from './eventually';
import type { TestStack } from './stack';

type Settling = Pick<TestStack, 'orm' | 'temporal' | 'taskQueue'>;

/**
 * Waits until the stack has nothing in flight that could still change what a test reads: no outbox
 * message undelivered, and no running workflow on the stack's task queue with a workflow task, an
 * activity or a child workflow pending. A workflow waiting on its timer (a lease, a window, a
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
    { what, timeoutMs, intervalMs: 50 },
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
    query: `TaskQueue = '${stack.taskQueue}' AND ExecutionStatus = 'Running'`,
  });
  for await (const execution of running) {
    const { raw } = await stack.temporal.workflow.getHandle(execution.workflowId, execution.runId).describe();
    if (
      raw.pendingWorkflowTask ||
      (raw.pendingActivities?.length ?? 0) > 0 ||
      (raw.pendingChildren?.length ?? 0) > 0
    )
      return false;
  }
  return true;
}
