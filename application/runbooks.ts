import { isUuid } from '../domain/uuid';
import { LockMode, type EntitySchema, type FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { SYSTEM_ORIGIN, type AuditOrigin } from '../db/audit';
import { cancelOpenJobs } from '../engine/jobMoves';
import { ConflictError, NotFoundError, ValidationError, type FieldIssue } from '../domain/errors';
import type { Page, PageRequest } from '../domain/pagination';
import { CelQuery, RequestBudget, selectorContext, type RecordScope } from '../domain/selectors';
import { slugify } from '../domain/slug';
import {
  checkInputDeclarations,
  MAX_SELECTED_ENTITIES,
  planRunbookRun,
  resolveRunInputs,
  type RunAgent,
  type RunbookAgentEntry,
  type RunbookInputDeclaration,
  type RunResource,
  type SelectorInput,
} from '../domain/runbookRuns';
import {
  DeploymentSchema,
  EnvironmentSchema,
  JobAgentSchema,
  JobSchema,
  ResourceSchema,
  RunbookRunSchema,
  RunbookSchema,
  type Job,
  type Runbook,
  type RunbookRun,
} from '../db/entities';
import { newId } from '../db/ids';
import { enqueueOrchestration } from '../db/outbox';
import type { SecretBox } from '../db/secrets';
import { jobSecrets, openConfig, sealConfig, sealedValue } from '../db/sensitiveValues';
import { SENSITIVE_CONFIG_KEYS } from '../domain/sensitive';
import { createdJobStatus } from '../domain/jobPlan';
import { findOwned, listFiltered, listPage } from './common';

export interface RunbookInput {
  name: string;
  slug?: string;
  inputs: RunbookInputDeclaration[];
  jobAgents: RunbookAgentEntry[];
}

export interface RunbookRunWithJobs {
  run: RunbookRun;
  jobs: Job[];
}

/**
 * Runbooks (Ctrlplane's "workflows", served at `/workflows`) and their runs (domain/runbookRuns.ts
 * decides; this loads and writes). Errors name them as the API does: `workflow`.
 */
export class RunbookStore {
  constructor(
    private readonly em: EntityManager,
    private readonly secrets: SecretBox,
    /** Who the request acts as: a cancel's audit events are theirs. */
    private readonly origin: AuditOrigin = SYSTEM_ORIGIN,
  ) {}

  list(workspaceId: string, page: PageRequest): Promise<Page<Runbook>> {
    return listPage(this.em, RunbookSchema, { workspaceId }, page);
  }

  get(workspaceId: string, id: string): Promise<Runbook> {
    return findOwned(this.em, RunbookSchema, workspaceId, id, 'workflow');
  }

  async getBySlug(workspaceId: string, slug: string): Promise<Runbook> {
    const runbook = await this.em.findOne(RunbookSchema, { workspaceId, slug });
    if (!runbook) throw new NotFoundError('workflow', slug);
    return runbook;
  }

  create(workspaceId: string, input: RunbookInput): Promise<Runbook> {
    return this.write(workspaceId, newId(), input, undefined);
  }

  async update(workspaceId: string, id: string, input: RunbookInput): Promise<Runbook> {
    return this.write(workspaceId, id, input, await this.get(workspaceId, id));
  }

  /** Deletes the runbook with its runs and their jobs; refused while a run has a job that has not ended. */
  async delete(workspaceId: string, id: string): Promise<Runbook> {
    const runbook = await this.get(workspaceId, id);
    const [active] = await this.em.execute<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM job j JOIN workflow_run r ON r.id = j.workflow_run_id
        WHERE r.workflow_id = ? AND j.completed_at IS NULL`,
      [id],
    );
    if ((active?.n ?? 0) > 0)
      throw new ConflictError(`The workflow has ${active!.n} jobs that have not ended`, 'workflow_running');
    await this.em.remove(runbook).flush();
    return runbook;
  }

  private async write(
    workspaceId: string,
    id: string,
    input: RunbookInput,
    existing: Runbook | undefined,
  ): Promise<Runbook> {
    const slug = input.slug ?? existing?.slug ?? slugify(input.name);
    const issues: FieldIssue[] = checkInputDeclarations(input.inputs);
    if (slug === '')
      issues.push({ path: 'body.slug', message: 'give a slug: none can be made from the name' });
    if (issues.length > 0) throw new ValidationError('The workflow is invalid', issues);
    const clash = await this.em.findOne(RunbookSchema, { workspaceId, slug, id: { $ne: id } });
    if (clash) {
      throw new ConflictError(`Workflow ${clash.id} already has the slug ${slug}`, 'DUPLICATE_SLUG', [], {
        slug,
        existingWorkflowId: clash.id,
      });
    }
    const box = this.secrets.forRecord(workspaceId, 'workflow', id);
    const fields = {
      name: input.name,
      slug,
      inputs: input.inputs,
      jobAgents: input.jobAgents.map((entry, index) => ({
        ...entry,
        config: sealConfig(
          box,
          entry.config,
          existing?.jobAgents[index]?.config,
          `body.jobAgents[${index}].config`,
        ),
      })),
    };
    const runbook = existing
      ? this.em.assign(existing, fields)
      : this.em.create(RunbookSchema, { id, workspaceId, ...fields });
    await this.em.flush();
    return runbook;
  }

  /** The agents the entries name, their secrets opened for the jobs' configuration. */
  private async runAgents(workspaceId: string, entries: readonly RunbookAgentEntry[]): Promise<RunAgent[]> {
    const agents = await this.em.find(JobAgentSchema, namedAgents(workspaceId, entries), {
      orderBy: { name: 'asc' },
    });
    return agents.map((agent) => ({
      id: agent.id,
      name: agent.name,
      type: agent.type,
      config: openConfig(this.secrets.forRecord(workspaceId, 'job_agent', agent.id), agent.config),
      metadata: agent.metadata,
    }));
  }

  /**
   * Runs a runbook: checks the inputs, selects the entities of its selector inputs, plans the
   * jobs, and writes the run with its jobs and the message that starts its Temporal workflow in one
   * transaction. Pull agents' jobs are queued at once; the run's Temporal workflow dispatches the others.
   */
  async run(
    workspaceId: string,
    runbook: Runbook,
    given: Record<string, unknown>,
  ): Promise<RunbookRunWithJobs> {
    const resolved = resolveRunInputs(runbook.inputs, given);
    const inputs = { ...resolved.values };
    // The run fans out over the resources its resource selector inputs select, each once.
    const fanOut = new Map<string, RunResource>();
    const budget = new RequestBudget();
    for (const selector of resolved.selectors) {
      const selected = await this.select(workspaceId, selector, budget);
      if (selector.replacesValue) inputs[selector.key] = selected;
      if (selector.entityType === 'resource')
        for (const resource of selected) fanOut.set(resource.id, resource);
    }
    const selectsResources = resolved.selectors.some((selector) => selector.entityType === 'resource');
    const resources = selectsResources ? [...fanOut.values()] : null;
    const runId = newId();
    const runbookBox = this.secrets.forRecord(workspaceId, 'workflow', runbook.id);
    const plans = planRunbookRun({
      runbook: { id: runbook.id, name: runbook.name, slug: runbook.slug },
      runId,
      entries: runbook.jobAgents.map((entry) => ({
        ...entry,
        config: openConfig(runbookBox, entry.config),
      })),
      inputs,
      resources,
      agents: await this.runAgents(workspaceId, runbook.jobAgents),
    });
    const box = jobSecrets(this.secrets, { workspaceId, runbookRunId: runId });
    return this.em.transactional(async (tx) => {
      const run = tx.create(RunbookRunSchema, {
        id: runId,
        workspaceId,
        runbookId: runbook.id,
        inputs: resolved.values,
        status: plans.length === 0 ? 'succeeded' : 'running',
        ...(plans.length === 0 ? { completedAt: new Date() } : {}),
      });
      // The run is written first: the jobs refer to it, and no entity relation tells the ORM so.
      await tx.flush();
      const jobs = plans.map((plan) => {
        const jobId = newId();
        return tx.create(JobSchema, {
          id: jobId,
          workspaceId,
          runbookRunId: runId,
          resourceId: plan.resource?.id ?? null,
          jobAgentId: plan.agent.id,
          agentType: plan.agent.type,
          agentEntry: plan.entry,
          attempt: 1,
          status: createdJobStatus(plan.agent.type),
          jobAgentConfig: Object.fromEntries(
            Object.entries(plan.config).map(([key, value]) => [
              key,
              SENSITIVE_CONFIG_KEYS.has(key) ? sealedValue(box, value) : value,
            ]),
          ),
          dispatchContext: { ...plan.context, job: { id: jobId } },
        });
      });
      await tx.flush();
      if (plans.length > 0)
        await enqueueOrchestration(tx, {
          kind: 'workflowRun.start',
          workspaceId,
          workflowId: runbook.id,
          runId,
        });
      return { run, jobs };
    });
  }

  /**
   * The entities a selector input selects, as selectors and templates see them, with their ids. The
   * input's expression comes with the request: it is evaluated on the request's budget (422 past it).
   */
  private async select(
    workspaceId: string,
    input: SelectorInput,
    budget: RequestBudget,
  ): Promise<RunResource[]> {
    let found: RunResource[];
    if (input.entityType === 'resource') {
      const query = new CelQuery('resource', input.expression, budget);
      const matched = await this.matched(
        workspaceId,
        ResourceSchema,
        { workspaceId, deletedAt: null },
        query,
      );
      found = matched.map((r) => ({ id: r.id, ...selectorContext.resource(r) }));
    } else if (input.entityType === 'environment') {
      const query = new CelQuery('environment', input.expression, budget);
      const matched = await this.matched(workspaceId, EnvironmentSchema, { workspaceId }, query);
      found = matched.map((e) => ({ ...selectorContext.environment(e), id: e.id }));
    } else {
      const query = new CelQuery('deployment', input.expression, budget);
      const matched = await this.matched(workspaceId, DeploymentSchema, { workspaceId }, query);
      found = matched.map((d) => ({ ...selectorContext.deployment(d), id: d.id }));
    }
    if (found.length > MAX_SELECTED_ENTITIES) {
      throw new ValidationError(
        `Input ${input.key} selects more than ${MAX_SELECTED_ENTITIES} ${input.entityType}s`,
        [{ path: `body.inputs.${input.key}`, message: 'narrow the selector' }],
      );
    }
    return found;
  }

  /**
   * The records a selector input's filter matches, up to one past the cap: a filter judged record by
   * record stops each reading after a bounded scan (application/common.ts `listFiltered`), so the
   * selection reads on from the cursor it answers until the list ends or the cap is passed — a match
   * past the first scan is never missed. Every reading spends the same request budget (422 past it).
   */
  private async matched<T extends { id: string }>(
    workspaceId: string,
    schema: EntitySchema<T, never>,
    where: FilterQuery<T>,
    query: CelQuery<RecordScope>,
  ): Promise<T[]> {
    const found: T[] = [];
    let cursor: string | undefined;
    do {
      const limit = MAX_SELECTED_ENTITIES + 1 - found.length;
      const page = await listFiltered(
        this.em,
        workspaceId,
        schema,
        where,
        { limit, offset: 0, cursor },
        query,
      );
      found.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor !== undefined && found.length <= MAX_SELECTED_ENTITIES);
    return found;
  }

  /**
   * Cancels a run that has not ended, as a whole: its jobs are cancelled as a release's are (a job an
   * agent holds under a lease is asked to stop first, engine/jobMoves/cancel.ts), the run ends
   * `cancelled`, and its workflow is woken to end with it.
   */
  cancelRun(workspaceId: string, runbookId: string, runId: string): Promise<RunbookRunWithJobs> {
    return this.em.transactional(async (tx) => {
      const run = await tx.findOne(
        RunbookRunSchema,
        { id: runId, workspaceId, runbookId },
        { lockMode: LockMode.PESSIMISTIC_WRITE },
      );
      if (!run) throw new NotFoundError('workflow run', runId);
      if (run.status !== 'running')
        throw new ConflictError(`The run has ended: it ${run.status}`, 'run_ended');
      await cancelOpenJobs(tx, { runbookRunId: runId }, 'workflow run cancelled', this.origin);
      run.status = 'cancelled';
      run.completedAt = new Date();
      await tx.flush();
      await enqueueOrchestration(tx, { kind: 'workflowRun.wake', runId });
      const jobs = await tx.find(
        JobSchema,
        { runbookRunId: runId },
        { orderBy: { createdAt: 'asc', id: 'asc' } },
      );
      return { run, jobs };
    });
  }

  async runs(workspaceId: string, runbookId: string, page: PageRequest): Promise<Page<RunbookRunWithJobs>> {
    await this.get(workspaceId, runbookId);
    const runs = await listPage(this.em, RunbookRunSchema, { workspaceId, runbookId }, page, 'desc');
    const jobs = await this.em.find(
      JobSchema,
      { runbookRunId: runs.items.map((run) => run.id) },
      { orderBy: { createdAt: 'asc', id: 'asc' } },
    );
    return {
      ...runs,
      items: runs.items.map((run) => ({ run, jobs: jobs.filter((job) => job.runbookRunId === run.id) })),
    };
  }
}

/** The agents the entries name, by id or name. */
function namedAgents(workspaceId: string, entries: readonly RunbookAgentEntry[]) {
  const refs = entries.map((entry) => entry.ref);
  return { workspaceId, $or: [{ name: { $in: refs } }, { id: { $in: refs.filter(isUuid) } }] };
}
