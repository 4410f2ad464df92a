import type { EntityManager } from '@mikro-orm/postgresql';
import type { Job } from '../../db/entities';
import type { SecretBox } from '../../db/secrets';
import type { JobStatus } from '../../domain/jobStatus';

/** What dispatching a job did, and what the release workflow does next. */
export type DispatchResult =
  /** Waiting for a pull agent to claim it. */
  | { kind: 'queued' }
  /** Handed to an external system; its status comes back by report or polling. */
  | { kind: 'triggered' }
  /** To be completed by the workflow after a delay (the test runner). */
  | { kind: 'scheduled'; afterSeconds: number; status: JobStatus; message: string | null }
  /** The job ended during dispatch (an invalid configuration, say). */
  | { kind: 'ended'; status: JobStatus };

export interface DispatchDeps {
  em: EntityManager;
  secrets: SecretBox;
}

/** One implementation per job agent type (SPEC: push agents and `http-pull`). */
export interface JobDispatcher {
  dispatch(job: Job, deps: DispatchDeps): Promise<DispatchResult>;
}
