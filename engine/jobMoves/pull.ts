import type { EntityManager } from '@mikro-orm/postgresql';
import { SYSTEM_ORIGIN, type AuditOrigin } from '../../db/audit';
import { ConflictError, ForbiddenError, NotFoundError } from '../../domain/errors';
import { TERMINAL_JOB_STATUSES, type JobStatus } from '../../domain/jobStatus';
import { boundedTotal, type BoundedPage, type PageRequest } from '../../domain/pagination';
import { jobClaims, jobHeartbeats } from '../metrics';
import { claimJob, type LeaseGrant } from './claims';
import { JobSchema, type Job } from '../../db/entities';
import { newId } from '../../db/ids';
import { changeJobStatus } from './change';
import type { SecretBox } from '../../db/secrets';
import { SecretReferenceError, withAgentSecrets } from '../../db/secretReferences';
import { openTree, jobSecrets } from '../../db/sensitiveValues';
import { preparedStatement, runPrepared } from '../../db/preparedStatements';
import { uuidArray } from '../../db/sql';

/** docs/behaviour.md "Job list item": what to claim, without dispatch context or variables. */
export interface PollItem {
  id: string;
  status: JobStatus;
  releaseId: string | null;
  /** The runbook run's id (Ctrlplane's field name). */
  workflowRunId: string | null;
  jobAgentId: string;
  createdAt: string;
  updatedAt: string;
  /** Null for a runbook run's job; a run that fans out over no resources leaves `resource` null too. */
  deployment: { id: string; name: string; slug: string } | null;
  environment: { id: string; name: string } | null;
  resource: { id: string; name: string; identifier: string } | null;
  /** Set once the job's cancel was asked (graceful cancel): the agent stops it before then. */
  cancelDeadline: string | null;
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
  /** Set once the job's cancel was asked: stop it and report `cancelled` before then. */
  cancelDeadline?: string;
}

/**
 * Jobs a poll counts past its page, at most. Fresh queue entries are not yet all-visible, so each
 * one counted opens its job's heap page: counting 1,000 took three quarters of a poll's time.
 */
export const POLL_COUNT_AHEAD = 100;

/** The fields of a job agent the pull endpoints read. */
interface AgentRow {
  id: string;
  name: string;
  type: string;
  config: Record<string, unknown>;
}

/** An agent of the caller's workspace, by id. */
const READ_AGENT = preparedStatement(
  'pull_read_agent',
  `SELECT id, name, type, config FROM job_agent WHERE id = $1 AND workspace_id = $2`,
);

/**
 * The poll, one statement whose cost does not grow with the queue: whether the agent is the
 * workspace's, its page read from the queue's index alone (`job_agent_queue_idx`) less the queued
 * jobs a hold keeps back (`job_hold`, read once into a hash: mostly empty), only the page's jobs
 * opened, and the total counted at most `$6` jobs (`pollTotal` says when it stopped there).
 * Another workspace's agent yields no agent and so no jobs.
 */
const POLL = preparedStatement(
  'pull_poll',
  `WITH agent AS (
     SELECT id FROM job_agent WHERE id = $1 AND workspace_id = $2
   ), page AS (
     SELECT id, created_at FROM job WHERE job_agent_id = (SELECT id FROM agent) AND status = $3
        AND ($3 <> 'queued' OR id NOT IN (SELECT job_id FROM job_hold))
      ORDER BY created_at, id LIMIT $4 OFFSET $5)
   SELECT
     EXISTS (SELECT 1 FROM agent) AS agent_found,
     (SELECT coalesce(json_agg(json_build_object(
               'id', j.id, 'status', j.status, 'releaseId', j.release_id, 'workflowRunId', j.workflow_run_id,
               'jobAgentId', j.job_agent_id, 'createdAt', j.created_at, 'updatedAt', j.updated_at,
               'deployment', CASE WHEN d.id IS NOT NULL THEN json_build_object('id', d.id, 'name', d.name, 'slug', d.slug) END,
               'environment', CASE WHEN e.id IS NOT NULL THEN json_build_object('id', e.id, 'name', e.name) END,
               'resource', CASE WHEN r.id IS NOT NULL THEN json_build_object('id', r.id, 'name', r.name, 'identifier', r.identifier) END,
               'cancelDeadline', j.cancel_deadline)
             ORDER BY p.created_at, p.id), '[]')
        FROM page p
        JOIN job j ON j.id = p.id
        LEFT JOIN deployment d ON d.id = j.deployment_id
        LEFT JOIN environment e ON e.id = j.environment_id
        LEFT JOIN resource r ON r.id = j.resource_id) AS items,
     (SELECT count(*)::int FROM (
        SELECT 1 FROM job WHERE job_agent_id = (SELECT id FROM agent) AND status = $3
           AND ($3 <> 'queued' OR id NOT IN (SELECT job_id FROM job_hold))
         LIMIT $6) queued) AS counted`,
);

/**
 * A heartbeat's fence and extension (`PullStore.heartbeat`); a job whose cancel was asked is extended
 * no further than its cancel deadline, and the answer carries that deadline.
 */
const HEARTBEAT = preparedStatement(
  'pull_heartbeat',
  `UPDATE job_claim c
      SET claim_expires_at = least(now() + make_interval(secs => c.lease_seconds), coalesce(j.cancel_deadline, 'infinity'))
     FROM job_agent a, job j
    WHERE c.job_id = $1 AND c.workspace_id = $2 AND a.id = c.job_agent_id AND j.id = c.job_id
      AND ($3::uuid IS NULL OR c.job_agent_id = $3::uuid)
      AND (c.claim_id = $4::uuid
           OR ($4::uuid IS NULL AND NOT coalesce((a.config->>'enforceClaimId')::boolean, false)))
    RETURNING c.claim_id, c.lease_seconds, c.claim_expires_at, j.cancel_deadline`,
);

/** A key scoped to one agent sees only that agent: another agent's id answers 404, as if unknown. */
function assertCallerMayAct(caller: AgentCaller, jobAgentId: string): void {
  if (caller.jobAgentId && caller.jobAgentId !== jobAgentId) throw new NotFoundError('job agent', jobAgentId);
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
    /** Who the request acts as: the claims' and reports' audit events are theirs. */
    private readonly origin: AuditOrigin = SYSTEM_ORIGIN,
  ) {}

  /**
   * Only an `http-pull` agent's jobs are handed out (claim, legacy queue) or given back: a push
   * agent's job carries the push agent's decrypted endpoint and credentials.
   */
  private async pullAgent(caller: AgentCaller, jobAgentId: string): Promise<AgentRow> {
    assertCallerMayAct(caller, jobAgentId);
    const [agent] = await runPrepared<AgentRow>(this.em, READ_AGENT, [jobAgentId, caller.workspaceId]);
    if (!agent) throw new NotFoundError('job agent', jobAgentId);
    if (agent.type !== 'http-pull') throw notPullAgent(agent.type);
    return agent;
  }

  /**
   * The poll: side-effect free, oldest first, an immediate answer (no long poll), one statement
   * (`POLL`) whose cost does not grow with the queue.
   */
  async poll(
    caller: AgentCaller,
    jobAgentId: string,
    status: JobStatus,
    page: PageRequest,
  ): Promise<BoundedPage<PollItem>> {
    assertCallerMayAct(caller, jobAgentId);
    const cap = page.offset + page.limit + POLL_COUNT_AHEAD;
    const [row] = await runPrepared<{ agent_found: boolean; items: PollItem[]; counted: number }>(
      this.em,
      POLL,
      [jobAgentId, caller.workspaceId, status, page.limit, page.offset, cap],
    );
    if (!row?.agent_found) throw new NotFoundError('job agent', jobAgentId);
    const items = row.items.map((item) => ({
      ...item,
      createdAt: new Date(item.createdAt).toISOString(),
      updatedAt: new Date(item.updatedAt).toISOString(),
    }));
    return {
      items,
      ...pollTotal(page, items.length, row.counted, cap),
      limit: page.limit,
      offset: page.offset,
    };
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
    if (outcome.outcome === 'claimed')
      jobClaims.inc({ workspace: caller.workspaceId, agent: outcome.agent.name });
    if (outcome.outcome === 'conflict') {
      throw new ConflictError(
        `The job is ${outcome.status}, not queued: another claim got it first`,
        'not_claimable',
      );
    }
    if (outcome.outcome === 'held') {
      const { hold } = outcome;
      throw new ConflictError(`The job is held by hold ${hold.id} of ${hold.by}: ${hold.reason}`, 'job_held');
    }
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
        status: 'queued',
        from: ['in_progress'],
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
        from: ['in_progress'],
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
    const [row] = await runPrepared<{
      claim_id: string;
      lease_seconds: number;
      claim_expires_at: Date;
      cancel_deadline: Date | null;
    }>(this.em, HEARTBEAT, [jobId, caller.workspaceId, caller.jobAgentId, claimId ?? null]);
    if (row) {
      jobHeartbeats.inc();
      return {
        jobId,
        claimId: row.claim_id,
        leaseSeconds: row.lease_seconds,
        expiresAt: new Date(row.claim_expires_at).toISOString(),
        ...(row.cancel_deadline ? { cancelDeadline: new Date(row.cancel_deadline).toISOString() } : {}),
      };
    }
    const job = await this.em.findOne(JobSchema, {
      id: jobId,
      workspaceId: caller.workspaceId,
      ...(caller.jobAgentId ? { jobAgentId: caller.jobAgentId } : {}),
    });
    if (!job) throw new NotFoundError('job', jobId);
    throw new ConflictError(
      claimId
        ? `claim ${claimId} is not the current claim of the job, which is ${job.status}`
        : `the job is ${job.status} and holds no claim this heartbeat may extend`,
      'stale_claim',
    );
  }

  /** V1 recovery (and an agent giving a job back): in_progress → queued; a claim it had ends. */
  async requeue(caller: AgentCaller, jobId: string, claimId: string | undefined): Promise<Job> {
    const [owner] = await this.em.execute<{ type: string }[]>(
      `SELECT a.type FROM job j JOIN job_agent a ON a.id = j.job_agent_id WHERE j.id = ? AND j.workspace_id = ?`,
      [jobId, caller.workspaceId],
    );
    if (owner && owner.type !== 'http-pull') throw notPullAgent(owner.type);
    return changeJobStatus(this.em, caller, jobId, {
      status: 'queued',
      message: 'given back to the queue',
      claimId,
      from: ['in_progress'],
      by: this.origin,
    });
  }

  /**
   * The legacy agent flow (docs/behaviour.md "Legacy agent polling flow"): the agent's jobs that have not ended
   * and carry no external id yet, with their release, variables and configuration. A workflow
   * run's jobs have no release to describe: that flow does not hand them out.
   */
  async legacyQueue(caller: AgentCaller, jobAgentId: string): Promise<LegacyQueueItem[]> {
    await this.pullAgent(caller, jobAgentId);
    const jobs = await this.em.find(
      JobSchema,
      {
        jobAgentId,
        externalId: null,
        releaseId: { $ne: null },
        status: { $nin: [...TERMINAL_JOB_STATUSES] },
      },
      { orderBy: { createdAt: 'asc', id: 'asc' }, limit: 100 },
    );
    const held = await heldJobs(this.em, jobs);
    return jobs
      .filter((job) => !(job.status === 'queued' && held.has(job.id)))
      .map((job) => {
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

/** Those of these jobs a hold keeps from agents (docs/behaviour.md "Holds and freezes"). */
async function heldJobs(em: EntityManager, jobs: readonly Job[]): Promise<Set<string>> {
  if (jobs.length === 0) return new Set();
  const rows = await em.execute<{ job_id: string }[]>(
    `SELECT DISTINCT job_id FROM job_hold WHERE job_id = ANY(?::uuid[])`,
    [uuidArray(jobs.map((job) => job.id))],
  );
  return new Set(rows.map((row) => row.job_id));
}

function notPullAgent(type: string): ForbiddenError {
  return new ForbiddenError(
    `This is a ${type} job agent: only http-pull agents' jobs are claimed, polled from the legacy queue or requeued`,
    'not_pull_agent',
  );
}

/** Exact when the page is not full; otherwise counted up to `POLL_COUNT_AHEAD` jobs past the page. */
function pollTotal(
  page: PageRequest,
  onPage: number,
  counted: number,
  cap: number,
): { total: number } | { totalAtLeast: number } {
  if (onPage > 0 && onPage < page.limit) return { total: page.offset + onPage };
  return boundedTotal(counted, cap);
}
