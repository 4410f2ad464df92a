import type { JobDispatcher } from './dispatcher';

/** SPEC "Other agent behavior": dispatching to an `http-pull` agent only queues the job; it pushes nothing. */
export const httpPullDispatcher: JobDispatcher = {
  async dispatch(job, { em }) {
    await em.execute(
      `UPDATE job SET status = 'queued', updated_at = now() WHERE id = ? AND status = 'pending'`,
      [job.id],
    );
    return { kind: 'queued' };
  },
};
