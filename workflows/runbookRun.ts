import { condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import { historyIsFull } from '../domain/releaseProgress';
import { runActions, type RunbookRunStatus } from '../domain/runbookRunProgress';
import { wakeSignal } from './definitions';
import { JobDriver } from './jobDriver';
import { databaseSteps } from './steps';

/** Without a wake, a run looks again this often: a lost wake never strands it. */
const IDLE_WAIT_MS = 10 * 60_000;
const HISTORY_LIMIT = 2_000;

export interface RunbookRunInput {
  runId: string;
  historyLimit?: number;
}

/**
 * `workflow-run/<runId>`: one run of a runbook, like a release's jobs without its gates. It
 * dispatches each of the run's jobs through its agent type (pull agents' jobs are queued already),
 * follows pushed ones, and ends the run once every job has ended: succeeded if every job did.
 * Each job that ends wakes it (engine/jobMoves/change.ts); the database is the truth.
 *
 * The function's name is the Temporal workflow type, and its steps' names (`workflowRunJobs`,
 * `finishWorkflowRun`) are activity types: open executions and recorded histories carry them from
 * when runbooks were called workflows, so they keep those names.
 */
export async function workflowRunWorkflow(
  input: RunbookRunInput,
): Promise<{ status: RunbookRunStatus | 'gone' }> {
  let woken = false;
  const jobs = new JobDriver(() => {
    woken = true;
  });
  setHandler(wakeSignal, () => {
    woken = true;
  });
  for (;;) {
    woken = false;
    const run = await databaseSteps.workflowRunJobs(input.runId);
    if (!run) return { status: 'gone' };
    if (run.status !== 'running') return { status: run.status };
    const actions = runActions(run.jobs, jobs.handled);
    for (const jobId of actions.follow) jobs.startFollowing(jobId);
    for (const jobId of actions.dispatch) await jobs.dispatch(jobId);
    if (actions.outcome !== 'running') {
      await databaseSteps.finishWorkflowRun(input.runId, actions.outcome);
      return { status: actions.outcome };
    }
    await condition(() => woken, IDLE_WAIT_MS);
    if (jobs.background.size === 0 && historyIsFull(workflowInfo(), input.historyLimit ?? HISTORY_LIMIT))
      return continueAsNew<typeof workflowRunWorkflow>(input);
  }
}
