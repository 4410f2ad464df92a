import type { EntityManager } from '@mikro-orm/postgresql';
import { SYSTEM_ORIGIN, type AuditOrigin } from '../db/audit';
import { JobSchema, type Job } from '../db/entities';
import { newId } from '../db/ids';
import type { SecretBox } from '../db/secrets';
import { SecretReferenceError, withAgentSecrets } from '../db/secretReferences';
import { jobSecrets, openTree } from '../db/sensitiveValues';
import { ConflictError, ForbiddenError, NotFoundError } from '../domain/errors';
import type { JobStatus } from '../domain/jobStatus';
import { guardRefusal, statusInto } from '../domain/claimLifecycle';
import type { BoundedPage, PageRequest } from '../domain/pagination';
import { jobClaims, jobHeartbeats } from '../engine/metrics';
import {
  changeJobStatus,
  claimJob,
  type LeaseGrant,
  assertCallerMayAct,
  extendLease,
  jobAgentTypeOf,
  legacyQueueJobs,
  pollJobs,
  readPullAgent,
  type AgentCaller,
  type LeaseState,
  type PollItem,
  type PullAgent,
} from '../engine/jobMoves';

/** A claimed job, its secrets open: the one response that carries them (over TLS). */
export interface ClaimedJob {
  job: Job;
  lease: LeaseGrant | null;
}

export interface LegacyQueueItem {
  id: string;
  release: {
    id: string;
    version: { tag: string; config: Record<string, unknown> };
    environment: { name: string };
    resource: { identifier: string; config: Record<string, unknown> };
    variables: Record<string, string>;
  };
  jobAgentConfig: Record<string, unknown>;
}

/**
 * The claim lifecycle as pull agents call it: poll, claim, heartbeat, requeue and the legacy queue.
 * Its moves and refusals are the transition table of domain/claimLifecycle.ts; its statements are
 * engine/jobMoves/ (claims.ts: claim, heartbeat, expiry; pull.ts: poll, legacy queue; change.ts:
 * every other status move).
 */
export class PullStore {
  constructor(
    private readonly em: EntityManager,
    private readonly secrets: SecretBox,
    /** Who the request acts as: the claims' and reports' audit events are theirs. */
    private readonly origin: AuditOrigin = SYSTEM_ORIGIN,
  ) {}

  /**
   * Only an `http-pull` agent's jobs are handed out (claim, legacy queue) or given back: a push
   * agent's job carries the push agent's decrypted endpoint and credentials.
   */
  private async pullAgent(caller: AgentCaller, jobAgentId: string): Promise<PullAgent> {
    assertCallerMayAct(caller, jobAgentId);
    const agent = await readPullAgent(this.em, caller.workspaceId, jobAgentId);
    if (!agent) throw new NotFoundError('job agent', jobAgentId);
    if (agent.type !== 'http-pull') throw notPullAgent(agent.type);
    return agent;
  }

  /** docs/behaviour.md "Poll": the agent's jobs in a status, oldest first, claiming nothing. */
  poll(
    caller: AgentCaller,
    jobAgentId: string,
    status: JobStatus,
    page: PageRequest,
  ): Promise<BoundedPage<PollItem>> {
    assertCallerMayAct(caller, jobAgentId);
    return pollJobs(this.em, caller.workspaceId, jobAgentId, status, page);
  }

  /**
   * docs/behaviour.md "Claim": the job is handed out at most once; a loser gets 409, an unknown job or another
   * agent's job 404. An agent with a lease also gets a claim record and its lease workflow.
   * The claim commits at once (its row lock is what racing agents wait on); if its answer then cannot
   * be built (a stored secret sealed under another key: 409), the claim is undone through the one
   * path of status moves, so the job is queued again with no claim left.
   */
  async claim(caller: AgentCaller, jobAgentId: string, jobId: string): Promise<ClaimedJob> {
    assertCallerMayAct(caller, jobAgentId);
    const outcome = await claimJob(this.em, {
      workspaceId: caller.workspaceId,
      jobAgentId,
      jobId,
      claimId: newId(),
      by: this.origin,
    });
    if (outcome.outcome === 'no_agent') throw new NotFoundError('job agent', jobAgentId);
    if (outcome.outcome === 'not_pull_agent') throw notPullAgent(outcome.agent.type);
    if (outcome.outcome === 'not_found') throw new NotFoundError('job', jobId);
    // Not queued (another claim got it first) or held: the claim lifecycle's table says which.
    if (outcome.outcome === 'refused') throw new ConflictError(outcome.refusal.reason, outcome.refusal.code);
    jobClaims.inc({ workspace: caller.workspaceId, agent: outcome.agent.name });
    const { job } = outcome;
    const sent = await this.withAgentSecrets(caller, job, outcome.lease?.claimId);
    try {
      const secrets = jobSecrets(this.secrets, job);
      return {
        job: {
          ...job,
          jobAgentConfig: openTree(secrets, sent.jobAgentConfig),
          dispatchContext: openTree(secrets, job.dispatchContext),
        },
        lease: outcome.lease,
      };
    } catch (error) {
      await changeJobStatus(this.em.fork(), caller, jobId, {
        event: 'requeue',
        claimId: outcome.lease?.claimId,
        message: 'its answer could not be built; back in the queue',
        by: this.origin,
      });
      throw error;
    }
  }

  /**
   * The job with the workspace secrets its configuration references resolved. One that cannot be
   * resolved (deleted, or bound to another destination) ends the job `invalid_job_agent` with the
   * reason, as a pushed job's dispatch does, rather than handing it out again and again.
   */
  private async withAgentSecrets(caller: AgentCaller, job: Job, claimId: string | undefined): Promise<Job> {
    try {
      return await withAgentSecrets(this.em, this.secrets, job);
    } catch (error) {
      if (!(error instanceof SecretReferenceError)) throw error;
      await changeJobStatus(this.em.fork(), caller, job.id, {
        status: 'invalid_job_agent',
        from: [statusInto('claim')],
        claimId,
        message: error.message,
        by: this.origin,
      });
      throw new ConflictError(
        `The job ended invalid_job_agent: ${error.message}`,
        'unresolved_secret_reference',
      );
    }
  }

  /**
   * docs/behaviour.md "Heartbeat": moves the lease's end to now + its length; touches only the claim record.
   * The fence (the current claim id, or none when the agent does not enforce it) and the update are one
   * statement, so a claim that ends meanwhile is never extended. When nothing was extended, the
   * answer says why: no such job (404), or its claim is gone or another one's (409, with its status).
   */
  async heartbeat(caller: AgentCaller, jobId: string, claimId: string | undefined): Promise<LeaseState> {
    const lease = await extendLease(this.em, caller, jobId, claimId);
    if (lease) {
      jobHeartbeats.inc();
      return lease;
    }
    const job = await this.em.findOne(JobSchema, {
      id: jobId,
      workspaceId: caller.workspaceId,
      ...(caller.jobAgentId ? { jobAgentId: caller.jobAgentId } : {}),
    });
    if (!job) throw new NotFoundError('job', jobId);
    const { code, reason } = guardRefusal('heartbeat', 'claim', {
      status: job.status,
      claim: claimId ? 'stale' : 'none',
      cancel: 'none',
      claimId,
    });
    throw new ConflictError(reason, code);
  }

  /**
   * V1 recovery (and an agent giving a job back): the table's `requeue`, in_progress → queued; a
   * claim it had ends.
   */
  async requeue(caller: AgentCaller, jobId: string, claimId: string | undefined): Promise<Job> {
    const type = await jobAgentTypeOf(this.em, caller.workspaceId, jobId);
    if (type && type !== 'http-pull') throw notPullAgent(type);
    return changeJobStatus(this.em, caller, jobId, { event: 'requeue', claimId, by: this.origin });
  }

  /**
   * The legacy agent flow (docs/behaviour.md "Legacy agent polling flow"): the agent's jobs that have not ended
   * and carry no external id yet, with their release, variables and configuration.
   */
  async legacyQueue(caller: AgentCaller, jobAgentId: string): Promise<LegacyQueueItem[]> {
    await this.pullAgent(caller, jobAgentId);
    const jobs = await legacyQueueJobs(this.em, jobAgentId);
    return jobs.map((job) => {
      const secrets = jobSecrets(this.secrets, job);
      const context = openTree(secrets, job.dispatchContext) as {
        release: { id: string };
        version: { tag: string; config: Record<string, unknown> };
        environment: { name: string };
        resource: { identifier: string; config: Record<string, unknown> };
        variables: Record<string, unknown>;
      };
      return {
        id: job.id,
        release: {
          id: context.release.id,
          version: { tag: context.version.tag, config: context.version.config },
          environment: { name: context.environment.name },
          resource: { identifier: context.resource.identifier, config: context.resource.config },
          variables: Object.fromEntries(
            Object.entries(context.variables ?? {}).map(([key, value]) => [
              key,
              typeof value === 'string' ? value : JSON.stringify(value),
            ]),
          ),
        },
        jobAgentConfig: openTree(secrets, job.jobAgentConfig),
      };
    });
  }
}

function notPullAgent(type: string): ForbiddenError {
  return new ForbiddenError(
    `This is a ${type} job agent: only http-pull agents' jobs are claimed, polled from the legacy queue or requeued`,
    'not_pull_agent',
  );
}
