import type { EntityManager } from '@mikro-orm/postgresql';
import type { Job } from '../../db/entities';
import { changeJobStatus, moveDispatchedJob, type JobStatusChange } from '../../engine/jobMoves';
import { ConflictError } from '../../domain/errors';
import { isTerminalJobStatus } from '../../domain/jobStatus';
import { TemplateError } from '../../domain/templates';
import type { DispatchResult, DispatchStep, FollowResult } from '../../domain/activityResults';
import { endAtDispatch } from './dispatcher';
import { RemoteRefusal } from './remote';

/** What every push agent (GitHub, Argo CD, Terraform Cloud) does the same way around its own calls. */

/** A remote run or sync that started a little before its job (the two clocks differ) still counts as the job's. */
export const REMOTE_CLOCK_SLACK_MS = 60_000;

/**
 * A status move found by following the remote run, which a webhook or a cancel may have made
 * first: losing that race changes nothing. It wakes no workflow: the release that follows the job
 * learns the move from the follow's answer.
 */
export async function moveJobQuietly(
  em: EntityManager,
  jobId: string,
  change: JobStatusChange,
): Promise<void> {
  try {
    await changeJobStatus(em, {}, jobId, { ...change, wakeRelease: false });
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
  }
}

/**
 * One step of sending a job to its remote service. A template that cannot be rendered ends the job
 * `invalid_job_agent`, a refusal by the remote `invalid_integration`, each with the reason; other
 * errors are thrown for the activity to retry. A step that answers `next` hands over to the next
 * step; the last one answers what the job became: `triggered`, linked to the remote's id, if any.
 */
export async function dispatchRemote(
  em: EntityManager,
  job: Job,
  send: () => Promise<{ next: DispatchStep } | { externalId?: string; message: string }>,
): Promise<DispatchResult> {
  let sent: Awaited<ReturnType<typeof send>>;
  try {
    sent = await send();
  } catch (error) {
    if (error instanceof TemplateError) return endAtDispatch(em, job.id, 'invalid_job_agent', error.message);
    if (error instanceof RemoteRefusal)
      return endAtDispatch(em, job.id, 'invalid_integration', error.message);
    throw error;
  }
  if ('next' in sent) return { kind: 'next', step: sent.next };
  await moveDispatchedJob(em, job.id, 'triggered', {
    externalId: sent.externalId ?? null,
    message: sent.message,
  });
  return { kind: 'triggered' };
}

/**
 * One look at a job's remote run. A refusal by the remote ends the job: `external_run_not_found`
 * when its linked run is gone (404), `invalid_integration` otherwise.
 */
export async function lookAtRemote(
  em: EntityManager,
  job: Job,
  look: () => Promise<FollowResult>,
): Promise<FollowResult> {
  try {
    return await look();
  } catch (error) {
    if (!(error instanceof RemoteRefusal)) throw error;
    if (isTerminalJobStatus(job.status)) return { done: true };
    await moveJobQuietly(em, job.id, {
      status: error.status === 404 && job.externalId ? 'external_run_not_found' : 'invalid_integration',
      message: error.message,
    });
    return { done: true };
  }
}
