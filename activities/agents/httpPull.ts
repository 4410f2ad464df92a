import { moveDispatchedJob } from '../../engine/jobMoves';
import type { JobDispatcher } from './dispatcher';

/** docs/behaviour.md "Pull job agents": dispatching to an `http-pull` agent only queues the job; it pushes nothing. */
export const httpPullDispatcher: JobDispatcher = {
  async dispatch(job, { em }) {
    await moveDispatchedJob(em, job.id, 'queued');
    return { kind: 'queued' };
  },
};
