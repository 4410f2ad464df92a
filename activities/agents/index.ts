import type { JobAgentType } from '../../domain/jobAgents';
import type { JobDispatcher } from './dispatcher';
import { httpPullDispatcher } from './httpPull';
import { testRunnerDispatcher } from './testRunner';

/** Push agents whose integration is not built yet end their jobs with a clear message instead of hanging. */
function notYetAvailable(type: JobAgentType): JobDispatcher {
  return {
    async dispatch(job, { em }) {
      await em.execute(
        `UPDATE job SET status = 'invalid_job_agent', message = ?, completed_at = now(), updated_at = now()
          WHERE id = ? AND status = 'pending'`,
        [`dispatch to ${type} agents is not available in this version of Flightdeck`, job.id],
      );
      return { kind: 'ended', status: 'invalid_job_agent' };
    },
  };
}

export const dispatchers: Record<JobAgentType, JobDispatcher> = {
  'http-pull': httpPullDispatcher,
  'test-runner': testRunnerDispatcher,
  'github-app': notYetAvailable('github-app'),
  'argo-cd': notYetAvailable('argo-cd'),
  tfe: notYetAvailable('tfe'),
};
