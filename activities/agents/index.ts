import type { JobAgentType } from '../../domain/jobAgents';
import { endAtDispatch, type JobDispatcher } from './dispatcher';
import { githubDispatcher } from './github';
import { httpPullDispatcher } from './httpPull';
import { testRunnerDispatcher } from './testRunner';

/** Push agents whose integration is not built yet end their jobs with a clear message instead of hanging. */
function notYetAvailable(type: JobAgentType): JobDispatcher {
  return {
    dispatch: (job, { em }) =>
      endAtDispatch(
        em,
        job.id,
        'invalid_job_agent',
        `dispatch to ${type} agents is not available in this version of Flightdeck`,
      ),
  };
}

export const dispatchers: Record<JobAgentType, JobDispatcher> = {
  'http-pull': httpPullDispatcher,
  'test-runner': testRunnerDispatcher,
  'github-app': githubDispatcher,
  'argo-cd': notYetAvailable('argo-cd'),
  tfe: notYetAvailable('tfe'),
};
