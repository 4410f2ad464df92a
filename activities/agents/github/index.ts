import type { Job } from '../../../db/entities';
import { describeRun, isRunOfJob, jobStatusOfRun, workflowInputs } from '../../../domain/github';
import { GithubAppConfig } from '../../../domain/jobAgents';
import { isTerminalJobStatus } from '../../../domain/jobStatus';
import { agentConfigOf, endAtDispatch, type DispatchDeps, type JobDispatcher } from '../dispatcher';
import { dispatchRemote, lookAtRemote, moveJobQuietly, REMOTE_CLOCK_SLACK_MS } from '../pushAgent';
import { GithubActions, githubTarget } from './api';

/** How long a dispatched job may wait for its run to show up before it ends `external_run_not_found`. */
const RUN_APPEARS_WITHIN_MS = 10 * 60_000;

/** Runs of a job are dispatched after it was created, give or take the two clocks' difference. */
function runsSince(job: Job): Date {
  return new Date(job.createdAt.getTime() - REMOTE_CLOCK_SLACK_MS);
}

function actionsFor(job: Job, { secrets, egress }: DispatchDeps): GithubActions | string {
  const target = githubTarget(job.jobAgentId!, agentConfigOf(GithubAppConfig, job, secrets));
  return typeof target === 'string' ? target : new GithubActions(egress, target);
}

/**
 * The GitHub workflow runner (`github-app`): `workflow_dispatch` with the four inputs, then the run
 * is found by its title (it must carry the job id), linked as the job's `externalId`, and followed
 * until it completes; a `workflow_run` webhook can report sooner.
 */
export const githubDispatcher: JobDispatcher = {
  async dispatch(job, deps) {
    const { em } = deps;
    const actions = actionsFor(job, deps);
    if (typeof actions === 'string') return endAtDispatch(em, job.id, 'invalid_job_agent', actions);
    // The inputs are ids and names, stored in the clear: nothing to open.
    const { inputs } = job.dispatchContext as { inputs: Parameters<typeof workflowInputs>[0] };
    return dispatchRemote(em, job, async () => {
      // A worker that died after dispatching and before recording it: the run is already there,
      // with the job id in its title; dispatching again would run the workflow twice.
      const earlier = (await actions.dispatchedRuns(runsSince(job))).find((run) => isRunOfJob(run, job.id));
      if (earlier) {
        return {
          externalId: String(earlier.id),
          message: `${describeRun(earlier)} (dispatched by an earlier attempt)`,
        };
      }
      await actions.dispatch(workflowInputs(inputs));
      return { message: 'workflow dispatched; waiting for its run' };
    });
  },

  follow(job, deps) {
    const { em } = deps;
    const actions = actionsFor(job, deps);
    if (typeof actions === 'string') return Promise.resolve({ done: true });
    return lookAtRemote(em, job, async () => {
      if (isTerminalJobStatus(job.status)) {
        // Ended here while the run may still go on: a cancelled release cancels its run.
        if (job.status === 'cancelled' && job.externalId) await actions.cancel(job.externalId);
        return { done: true };
      }
      const run = job.externalId
        ? await actions.run(job.externalId)
        : (await actions.dispatchedRuns(runsSince(job))).find((candidate) => isRunOfJob(candidate, job.id));
      if (!run) {
        if (Date.now() - job.createdAt.getTime() < RUN_APPEARS_WITHIN_MS) return { done: false };
        await moveJobQuietly(em, job.id, {
          status: 'external_run_not_found',
          message: `no run of the workflow carried the job id in its title within 10 minutes; give the workflow run-name: "… \${{ inputs.job_id }}"`,
        });
        return { done: true };
      }
      const status = jobStatusOfRun(run);
      const changed = status !== job.status || !job.externalId;
      if (changed) {
        await moveJobQuietly(em, job.id, { status, externalId: String(run.id), message: describeRun(run) });
      }
      return { done: isTerminalJobStatus(status), changed };
    });
  },
};
