import type { EntityManager } from '@mikro-orm/postgresql';
import type { Job } from '../../../db/entities';
import { changeJobStatus, type JobStatusChange } from '../../../db/jobStatusChanges';
import { openTree } from '../../../db/sensitiveValues';
import { ConflictError } from '../../../domain/errors';
import { describeRun, isRunOfJob, jobStatusOfRun, workflowInputs } from '../../../domain/github';
import { GithubAppConfig } from '../../../domain/jobAgents';
import { isTerminalJobStatus } from '../../../domain/jobStatus';
import { agentConfigOf, endAtDispatch, type DispatchDeps, type JobDispatcher } from '../dispatcher';
import { RemoteRefusal } from '../remote';
import { GithubActions, githubTarget } from './api';

/** How long a dispatched job may wait for its run to show up before it ends `external_run_not_found`. */
const RUN_APPEARS_WITHIN_MS = 10 * 60_000;
/** Runs created a little before the job (clocks differ) still count. */
const CLOCK_SLACK_MS = 60_000;

function actionsFor(job: Job, secrets: DispatchDeps['secrets']): GithubActions | string {
  const target = githubTarget(agentConfigOf(GithubAppConfig, job, secrets));
  return 'missing' in target
    ? `the github-app configuration lacks ${target.missing.join(', ')}`
    : new GithubActions(target);
}

/** A status move that a webhook may have made first: losing that race is fine. */
async function moveJob(em: EntityManager, jobId: string, change: JobStatusChange): Promise<void> {
  try {
    await changeJobStatus(em, {}, jobId, change);
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
  }
}

/**
 * The GitHub workflow runner (`github-app`): `workflow_dispatch` with the four inputs, then the run
 * is found by its title (it must carry the job id), linked as the job's `externalId`, and followed
 * until it completes; a `workflow_run` webhook can report sooner.
 */
export const githubDispatcher: JobDispatcher = {
  async dispatch(job, { em, secrets }) {
    const actions = actionsFor(job, secrets);
    if (typeof actions === 'string') return endAtDispatch(em, job.id, 'invalid_job_agent', actions);
    const context = openTree(secrets, job.dispatchContext) as {
      inputs: Parameters<typeof workflowInputs>[0];
    };
    try {
      await actions.dispatch(workflowInputs(context.inputs));
    } catch (error) {
      if (error instanceof RemoteRefusal)
        return endAtDispatch(em, job.id, 'invalid_integration', error.message);
      throw error;
    }
    await em.execute(
      `UPDATE job SET status = 'triggered', message = 'workflow dispatched; waiting for its run', updated_at = now()
        WHERE id = ? AND status = 'pending'`,
      [job.id],
    );
    return { kind: 'triggered' };
  },

  async follow(job, { em, secrets }) {
    const actions = actionsFor(job, secrets);
    if (typeof actions === 'string') return { done: true };
    try {
      if (isTerminalJobStatus(job.status)) {
        // Ended here while the run may still go on: a cancelled release cancels its run.
        if (job.status === 'cancelled' && job.externalId) await actions.cancel(job.externalId);
        return { done: true };
      }
      const run = job.externalId
        ? await actions.run(job.externalId)
        : (await actions.dispatchedRuns(new Date(job.createdAt.getTime() - CLOCK_SLACK_MS))).find(
            (candidate) => isRunOfJob(candidate, job.id),
          );
      if (!run) {
        if (Date.now() - job.createdAt.getTime() < RUN_APPEARS_WITHIN_MS) return { done: false };
        await moveJob(em, job.id, {
          status: 'external_run_not_found',
          message: `no run of the workflow carried the job id in its title within 10 minutes; give the workflow run-name: "… \${{ inputs.job_id }}"`,
        });
        return { done: true };
      }
      const status = jobStatusOfRun(run);
      const changed = status !== job.status || !job.externalId;
      if (changed)
        await moveJob(em, job.id, { status, externalId: String(run.id), message: describeRun(run) });
      return { done: isTerminalJobStatus(status), changed };
    } catch (error) {
      if (!(error instanceof RemoteRefusal)) throw error;
      if (isTerminalJobStatus(job.status)) return { done: true };
      await moveJob(em, job.id, {
        status: error.status === 404 && job.externalId ? 'external_run_not_found' : 'invalid_integration',
        message: error.message,
      });
      return { done: true };
    }
  },
};
