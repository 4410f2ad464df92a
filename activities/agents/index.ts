import type { JobAgentType } from '../../domain/jobAgentTypes';
import { argoCdDispatcher } from './argoCd';
import type { JobDispatcher } from './dispatcher';
import { githubDispatcher } from './github';
import { httpPullDispatcher } from './httpPull';
import { testRunnerDispatcher } from './testRunner';
import { tfeDispatcher } from './tfe';

export const dispatchers: Record<JobAgentType, JobDispatcher> = {
  'http-pull': httpPullDispatcher,
  'test-runner': testRunnerDispatcher,
  'github-app': githubDispatcher,
  'argo-cd': argoCdDispatcher,
  tfe: tfeDispatcher,
};
