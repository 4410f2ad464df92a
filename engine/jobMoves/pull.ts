import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError } from '../../domain/errors';
import { TERMINAL_JOB_STATUSES, type JobStatus } from '../../domain/jobStatus';
import { boundedTotal, type BoundedPage, type PageRequest } from '../../domain/pagination';
import { JobSchema, type Job } from '../../db/entities';
import { preparedStatement, runPrepared } from '../../db/preparedStatements';
import { uuidArray } from '../../db/sql';

/**
 * The pull endpoints' reads: the poll, and the agent and the jobs the legacy queue reads. Their store
 * (application/pull.ts) claims, heartbeats (claims.ts), answers and gives jobs back through the
 * status moves of this folder.
 */

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

/**
 * Jobs a poll counts past its page, at most. Fresh queue entries are not yet all-visible, so each
 * one counted opens its job's heap page: counting 1,000 took three quarters of a poll's time.
 */
export const POLL_COUNT_AHEAD = 100;

/** The fields of a job agent the pull endpoints read. */
export interface PullAgent {
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

/** A key scoped to one agent sees only that agent: another agent's id answers 404, as if unknown. */
export function assertCallerMayAct(caller: AgentCaller, jobAgentId: string): void {
  if (caller.jobAgentId && caller.jobAgentId !== jobAgentId) throw new NotFoundError('job agent', jobAgentId);
}

/** Who may act for which agent: a key scoped to one agent sees only that agent (others answer 404). */
export interface AgentCaller {
  workspaceId: string;
  jobAgentId: string | null;
}

/** An agent of the workspace, by id. */
export async function readPullAgent(
  em: EntityManager,
  workspaceId: string,
  jobAgentId: string,
): Promise<PullAgent | undefined> {
  const [agent] = await runPrepared<PullAgent>(em, READ_AGENT, [jobAgentId, workspaceId]);
  return agent;
}

/**
 * The poll: side-effect free, oldest first, an immediate answer (no long poll), one statement
 * (`POLL`) whose cost does not grow with the queue.
 */
export async function pollJobs(
  em: EntityManager,
  workspaceId: string,
  jobAgentId: string,
  status: JobStatus,
  page: PageRequest,
): Promise<BoundedPage<PollItem>> {
  const cap = page.offset + page.limit + POLL_COUNT_AHEAD;
  const [row] = await runPrepared<{ agent_found: boolean; items: PollItem[]; counted: number }>(em, POLL, [
    jobAgentId,
    workspaceId,
    status,
    page.limit,
    page.offset,
    cap,
  ]);
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

/** The type of the agent that runs a job of the workspace, if there is such a job. */
export async function jobAgentTypeOf(
  em: EntityManager,
  workspaceId: string,
  jobId: string,
): Promise<string | undefined> {
  const [owner] = await em.execute<{ type: string }[]>(
    `SELECT a.type FROM job j JOIN job_agent a ON a.id = j.job_agent_id WHERE j.id = ? AND j.workspace_id = ?`,
    [jobId, workspaceId],
  );
  return owner?.type;
}

/**
 * The legacy agent flow's jobs (docs/behaviour.md "Legacy agent polling flow"): the agent's jobs that
 * have not ended and carry no external id yet, less the queued ones a hold keeps back. A runbook
 * run's jobs have no release to describe: that flow does not hand them out.
 */
export async function legacyQueueJobs(em: EntityManager, jobAgentId: string): Promise<Job[]> {
  const jobs = await em.find(
    JobSchema,
    {
      jobAgentId,
      externalId: null,
      releaseId: { $ne: null },
      status: { $nin: [...TERMINAL_JOB_STATUSES] },
    },
    { orderBy: { createdAt: 'asc', id: 'asc' }, limit: 100 },
  );
  const held = await heldJobs(em, jobs);
  return jobs.filter((job) => !(job.status === 'queued' && held.has(job.id)));
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
