import { isPushAgent, type JobAgentType } from './jobAgentTypes';
import { isTerminalJobStatus, type JobStatus } from './jobStatus';

/**
 * What a runbook run's Temporal workflow decides on each look (workflows/runbookRun.ts). Apart
 * from domain/runbookRuns.ts, whose templates and schemas the workflow bundle need not carry.
 */

export type RunbookRunStatus = 'running' | 'succeeded' | 'failed' | 'cancelled';

/** A run's jobs as its Temporal workflow looks at them. */
export interface RunJobState {
  id: string;
  status: JobStatus;
  agentType: JobAgentType | null;
}

export interface RunActions {
  /** Pending jobs not dispatched yet by this run's Temporal workflow. */
  dispatch: string[];
  /** Pushed jobs under way: followed (again, after a continue-as-new) until they end. */
  follow: string[];
  /** `running` until every job has ended; then whether every job succeeded. */
  outcome: RunbookRunStatus;
}

/**
 * What a run's Temporal workflow does on a look. `handled` holds the jobs it dispatched already, so a
 * repeated look does nothing twice. A run has ended once every job has; it succeeded if every job did.
 */
export function runActions(jobs: readonly RunJobState[], handled: ReadonlySet<string>): RunActions {
  const ended = jobs.every((job) => isTerminalJobStatus(job.status));
  return {
    dispatch: jobs.filter((job) => job.status === 'pending' && !handled.has(job.id)).map((job) => job.id),
    follow: jobs
      .filter(
        (job) => isPushAgent(job.agentType) && job.status !== 'pending' && !isTerminalJobStatus(job.status),
      )
      .map((job) => job.id),
    outcome: !ended ? 'running' : jobs.every((job) => job.status === 'successful') ? 'succeeded' : 'failed',
  };
}
