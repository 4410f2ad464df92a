import type { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError, NotFoundError } from '../../domain/errors';
import { leaseSecondsOf } from '../../domain/jobAgents';
import { TERMINAL_JOB_STATUSES, type JobStatus } from '../../domain/jobStatus';
import type { Page, PageRequest } from '../../domain/pagination';
import { claimJob, type LeaseGrant } from '../jobMoves';
import { JobAgentSchema, JobSchema, type Job, type JobAgent } from '../entities';
import { newId } from '../ids';
import { changeJobStatus, fenceClaim } from '../jobMoves';
import type { SecretBox } from '../secrets';
import { openTree } from '../sensitiveValues';

/** SPEC "Job list item (pull poll)": what to claim, without dispatch context or variables. */
export interface PollItem {
  id: string;
  status: JobStatus;
  releaseId: string;
  createdAt: string;
  deployment: { id: string; name: string; slug: string };
  environment: { id: string; name: string };
  resource: { id: string; name: string; identifier: string };
}

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

export interface LeaseState {
  jobId: string;
  claimId: string;
  leaseSeconds: number;
  expiresAt: string;
}

/** Who may act for which agent: a key scoped to one agent sees only that agent (others answer 404). */
export interface AgentCaller {
  workspaceId: string;
  jobAgentId: string | null;
}

export class PullStore {
  constructor(
    private readonly em: EntityManager,
    private readonly secrets: SecretBox,
  ) {}

  private async agent(caller: AgentCaller, jobAgentId: string): Promise<JobAgent> {
    const agent = await this.em.findOne(JobAgentSchema, { id: jobAgentId, workspaceId: caller.workspaceId });
    if (!agent || (caller.jobAgentId && caller.jobAgentId !== jobAgentId))
      throw new NotFoundError('job agent', jobAgentId);
    return agent;
  }

  /** The poll: side-effect free, oldest first, an immediate answer (no long poll). */
  async poll(
    caller: AgentCaller,
    jobAgentId: string,
    status: JobStatus,
    page: PageRequest,
  ): Promise<Page<PollItem>> {
    await this.agent(caller, jobAgentId);
    const items = await this.em.execute<PollItem[]>(
      `SELECT j.id, j.status, j.release_id AS "releaseId", j.created_at AS "createdAt",
              json_build_object('id', d.id, 'name', d.name, 'slug', d.slug) AS deployment,
              json_build_object('id', e.id, 'name', e.name) AS environment,
              json_build_object('id', r.id, 'name', r.name, 'identifier', r.identifier) AS resource
         FROM job j
         JOIN deployment d ON d.id = j.deployment_id
         JOIN environment e ON e.id = j.environment_id
         JOIN resource r ON r.id = j.resource_id
        WHERE j.job_agent_id = ? AND j.status = ?
        ORDER BY j.created_at, j.id
        LIMIT ? OFFSET ?`,
      [jobAgentId, status, page.limit, page.offset],
    );
    const [counted] = await this.em.execute<{ total: number }[]>(
      `SELECT count(*)::int AS total FROM job WHERE job_agent_id = ? AND status = ?`,
      [jobAgentId, status],
    );
    return {
      items: items.map((item) => ({ ...item, createdAt: new Date(item.createdAt).toISOString() })),
      total: counted?.total ?? 0,
      limit: page.limit,
      offset: page.offset,
    };
  }

  /**
   * SPEC "Claim": the job is handed out at most once; a loser gets 409, an unknown job or another
   * agent's job 404. An agent with a lease (phase V2) also gets a claim record and its lease workflow.
   */
  async claim(caller: AgentCaller, jobAgentId: string, jobId: string): Promise<ClaimedJob> {
    const agent = await this.agent(caller, jobAgentId);
    const outcome = await claimJob(this.em, {
      workspaceId: caller.workspaceId,
      jobAgentId,
      jobId,
      claimId: newId(),
      leaseSeconds: leaseSecondsOf(agent.config),
    });
    if (outcome.outcome === 'not_found') throw new NotFoundError('job', jobId);
    if (outcome.outcome === 'conflict') {
      throw new ConflictError(
        `The job is ${outcome.status}, not queued: another claim got it first`,
        'not_claimable',
      );
    }
    const job = await this.em.findOneOrFail(JobSchema, { id: jobId });
    return {
      job: {
        ...job,
        jobAgentConfig: openTree(this.secrets, job.jobAgentConfig),
        dispatchContext: openTree(this.secrets, job.dispatchContext),
      },
      lease: outcome.lease,
    };
  }

  /** Phase V2: moves the lease's end to now + its length; touches only the claim record. */
  async heartbeat(caller: AgentCaller, jobId: string, claimId: string | undefined): Promise<LeaseState> {
    return this.em.transactional(async (em) => {
      const [owner] = await em.execute<{ job_agent_id: string }[]>(
        `SELECT job_agent_id FROM job_claim WHERE job_id = ? AND workspace_id = ?`,
        [jobId, caller.workspaceId],
      );
      if (!owner || (caller.jobAgentId && caller.jobAgentId !== owner.job_agent_id)) {
        throw new NotFoundError('claim of job', jobId);
      }
      await fenceClaim(em, jobId, claimId, true);
      const [row] = await em.execute<{ claim_id: string; lease_seconds: number; claim_expires_at: string }[]>(
        `UPDATE job_claim SET claim_expires_at = now() + make_interval(secs => lease_seconds)
          WHERE job_id = ? RETURNING claim_id, lease_seconds, claim_expires_at`,
        [jobId],
      );
      return {
        jobId,
        claimId: row!.claim_id,
        leaseSeconds: row!.lease_seconds,
        expiresAt: new Date(row!.claim_expires_at).toISOString(),
      };
    });
  }

  /** V1 recovery (and an agent giving a job back): in_progress → queued; a claim it had ends. */
  requeue(caller: AgentCaller, jobId: string, claimId: string | undefined): Promise<Job> {
    return changeJobStatus(this.em, caller, jobId, {
      status: 'queued',
      message: 'given back to the queue',
      claimId,
      from: ['in_progress'],
    });
  }

  /**
   * The legacy agent flow (SPEC "Legacy agent polling flow"): the agent's jobs that have not ended
   * and carry no external id yet, with their release, variables and configuration.
   */
  async legacyQueue(caller: AgentCaller, jobAgentId: string): Promise<LegacyQueueItem[]> {
    await this.agent(caller, jobAgentId);
    const jobs = await this.em.find(
      JobSchema,
      { jobAgentId, externalId: null, status: { $nin: [...TERMINAL_JOB_STATUSES] } },
      { orderBy: { createdAt: 'asc', id: 'asc' }, limit: 100 },
    );
    return jobs.map((job) => {
      const context = openTree(this.secrets, job.dispatchContext) as {
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
        jobAgentConfig: openTree(this.secrets, job.jobAgentConfig),
      };
    });
  }
}
