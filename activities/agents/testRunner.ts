import { moveDispatchedJob } from '../../engine/jobMoves';
import { TestRunnerConfig } from '../../domain/jobAgents';
import { agentConfigOf, type JobDispatcher } from './dispatcher';

/**
 * The `test-runner` agent, for tests and demos: the job runs at once and ends with the configured
 * status after the configured delay, which the release workflow waits out on a durable timer.
 */
export const testRunnerDispatcher: JobDispatcher = {
  async dispatch(job, { em, secrets }) {
    const config = agentConfigOf(TestRunnerConfig, job, secrets);
    await moveDispatchedJob(em, job.id, 'in_progress');
    return {
      kind: 'scheduled',
      afterSeconds: config.delaySeconds,
      status: config.status,
      message: config.message ?? null,
    };
  },
};
