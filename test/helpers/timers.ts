import type { WorkflowHandle } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time';

export interface WorkflowTimer {
  id: string;
  /** When Temporal started it, by the server's clock. */
  startedAt: number;
  /** When it fires (or fired): its start plus its duration. */
  dueAt: number;
  /** Absent while it is pending. */
  ended?: 'fired' | 'canceled';
}

/**
 * The timers of a workflow's run as its history records them, oldest first: Temporal's describe
 * lists a workflow's pending activities and children, never its timers, so a test that needs to
 * know when a workflow will next wake (a lease's sweep, a window's end) reads them here.
 */
export async function workflowTimers(handle: WorkflowHandle): Promise<WorkflowTimer[]> {
  const timers = new Map<string, WorkflowTimer>();
  for (const event of (await handle.fetchHistory()).events ?? []) {
    const started = event.timerStartedEventAttributes;
    if (started?.timerId) {
      const startedAt = tsToMs(event.eventTime);
      const dueAt = startedAt + tsToMs(started.startToFireTimeout);
      timers.set(started.timerId, { id: started.timerId, startedAt, dueAt });
    }
    const fired = event.timerFiredEventAttributes?.timerId;
    if (fired) timers.get(fired)!.ended = 'fired';
    const canceled = event.timerCanceledEventAttributes?.timerId;
    if (canceled) timers.get(canceled)!.ended = 'canceled';
  }
  return [...timers.values()];
}
