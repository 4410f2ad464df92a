import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from '../db/database';
import { finishRunbookRun, runbookRunJobs } from '../engine/executor';
import type { RunbookRunStatus } from '../domain/runbookRunProgress';
import type { RunbookRunJobs } from '../domain/activityResults';

/**
 * The database steps of a runbook run's Temporal workflow; its jobs are dispatched by the release
 * activities' `dispatchJob`. The keys are activity names recorded in histories, from when runbooks
 * were called workflows: `workflowRunJobs` and `finishWorkflowRun` stay as they are.
 */
export function createRunbookRunActivities({ orm }: { orm: Database }) {
  const fork = () => orm.em.fork() as EntityManager;
  return {
    async workflowRunJobs(runId: string): Promise<RunbookRunJobs | null> {
      return runbookRunJobs(fork(), runId);
    },

    async finishWorkflowRun(runId: string, status: Exclude<RunbookRunStatus, 'running'>): Promise<void> {
      await finishRunbookRun(fork(), runId, status);
    },
  };
}
