import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from '../db/database';
import { finishWorkflowRun, workflowRunJobs } from '../engine/executor/workflowRunSteps';
import type { RunJobState, WorkflowRunStatus } from '../domain/workflowRunProgress';

/** The database steps of a workflow run's workflow; its jobs are dispatched by the release activities' `dispatchJob`. */
export function createWorkflowRunActivities({ orm }: { orm: Database }) {
  const fork = () => orm.em.fork() as EntityManager;
  return {
    async workflowRunJobs(runId: string): Promise<{ status: WorkflowRunStatus; jobs: RunJobState[] } | null> {
      return workflowRunJobs(fork(), runId);
    },

    async finishWorkflowRun(runId: string, status: Exclude<WorkflowRunStatus, 'running'>): Promise<void> {
      await finishWorkflowRun(fork(), runId, status);
    },
  };
}
