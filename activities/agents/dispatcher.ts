import type { Egress } from '../egress';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Job } from '../../db/entities';
import type { RecordSecrets } from '../../db/secrets';
import type { JobStatus } from '../../domain/jobStatus';
import type { DispatchResult, DispatchStep, FollowResult } from '../../domain/activityResults';
import { moveDispatchedJob } from '../../engine/jobMoves';
import { openTree } from '../../db/sensitiveValues';
import type { z } from 'zod';

export interface DispatchDeps {
  em: EntityManager;
  /** Every request to the agent's service goes through it (activities/egress.ts). */
  egress: Egress;
  /** The job's release's sealed values. */
  secrets: RecordSecrets;
}

/** One implementation per job agent type (docs/behaviour.md "Push agents", "Pull job agents"). */
export interface JobDispatcher {
  /** The first step without `step`; a later one with what the previous step answered. */
  dispatch(job: Job, deps: DispatchDeps, step?: DispatchStep): Promise<DispatchResult>;
  /**
   * Push agents: looks at the remote run once and brings the job's status up to date; for a job
   * that ended here (a cancelled release), cancels the remote run where the service allows it.
   * The release workflow calls it on a durable timer for every `triggered` job.
   */
  follow?(job: Job, deps: DispatchDeps): Promise<FollowResult>;
}

/**
 * The agent type's own fields of a job's merged configuration (the merge also holds variables and
 * the release context), parsed with the type's schema; secrets opened.
 */
export function agentConfigOf<S extends z.ZodObject>(
  schema: S,
  job: Job,
  secrets: RecordSecrets,
): z.output<S> {
  // Only the agent's own keys are opened: the rest of the snapshot holds sealed variables it never reads.
  const own = Object.keys(schema.shape);
  const mine = Object.fromEntries(Object.entries(job.jobAgentConfig).filter(([key]) => own.includes(key)));
  return schema.parse(openTree(secrets, mine));
}

/** Ends a job during dispatch (an unusable configuration, a refusal by the remote), with the reason. */
export async function endAtDispatch(
  em: EntityManager,
  jobId: string,
  status: JobStatus,
  message: string,
): Promise<DispatchResult> {
  await moveDispatchedJob(em, jobId, status, { message });
  return { kind: 'ended', status };
}

/**
 * What a dispatch cannot do without: the names among `fields` that have no value (a secret counts
 * only once opened to text), as the reason the job ends `invalid_job_agent`; undefined if none.
 */
export function missingConfiguration(type: string, fields: Record<string, unknown>): string | undefined {
  const missing = Object.entries(fields)
    .filter(([, value]) => value === undefined || value === null || value === '')
    .map(([name]) => name);
  return missing.length > 0 ? `the ${type} configuration lacks ${missing.join(', ')}` : undefined;
}
