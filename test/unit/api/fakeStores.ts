import { randomUUID } from 'node:crypto';
import type { StoreFactory, Stores } from '../../../application';
import type { Upserted } from '../../../application/common';
import type { Deployment, Environment, Hold, Job, Resource, System } from '../../../db/entities';
import type { AuditActor, AuditEventInput } from '../../../domain/audit';
import { ConflictError, NotFoundError } from '../../../domain/errors';
import type { JobStatus } from '../../../domain/jobStatus';
import type { Page, PageRequest } from '../../../domain/pagination';
import type { Principal } from '../../../domain/principal';
import type { AgentCaller } from '../../../engine/jobMoves';

/**
 * In-memory fakes of the stores the API calls (application/index.ts `Stores`), for route tests
 * that run with no PostgreSQL and no Temporal. They keep records as the real stores answer them
 * (404 for another workspace's id, 409 for a duplicate), not the real stores' rules: the routes'
 * own work (validation, authorization, status codes, problem+json, the caller each store is told
 * about) is what these tests check. A store or method not faked here fails the test that calls it.
 */

type Row = { id: string; workspaceId: string; createdAt: Date };
type Stamps = keyof Row | 'updatedAt';

/**
 * Records of one kind, each in its workspace, oldest first; optionally unique by a field within it,
 * and stamped with `updatedAt` when the kind has one.
 */
class RecordTable<R extends Row> {
  private readonly rows = new Map<string, R>();

  constructor(
    private readonly kind: string,
    private readonly options: { uniqueBy?: keyof R & string; updatedAt?: boolean } = {},
  ) {}

  upsert(workspaceId: string, id: string, fields: Omit<R, Stamps>): Upserted<R> {
    const existing = this.rows.get(id);
    if (existing && existing.workspaceId !== workspaceId) throw new NotFoundError(this.kind, id);
    const unique = this.options.uniqueBy;
    const value = unique && (fields as Partial<R>)[unique];
    if (unique && this.find(workspaceId, (row) => row.id !== id && row[unique] === value)) {
      throw new ConflictError(`A ${this.kind} with ${unique} "${String(value)}" already exists`, 'duplicate');
    }
    const now = new Date();
    const createdAt = existing?.createdAt ?? now;
    const record = {
      ...fields,
      id,
      workspaceId,
      createdAt,
      ...(this.options.updatedAt ? { updatedAt: now } : {}),
    } as R;
    this.rows.set(id, record);
    return { record, created: !existing };
  }

  get(workspaceId: string, id: string): R {
    const row = this.rows.get(id);
    if (!row || row.workspaceId !== workspaceId) throw new NotFoundError(this.kind, id);
    return row;
  }

  find(workspaceId: string, matches: (row: R) => boolean): R | undefined {
    return [...this.rows.values()].find((row) => row.workspaceId === workspaceId && matches(row));
  }

  byIds(ids: readonly string[]): R[] {
    return ids.flatMap((id) => this.rows.get(id) ?? []);
  }

  page(workspaceId: string, page: PageRequest, matches: (row: R) => boolean = () => true): Page<R> {
    const rows = [...this.rows.values()].filter((row) => row.workspaceId === workspaceId && matches(row));
    return {
      items: rows.slice(page.offset, page.offset + page.limit),
      total: rows.length,
      limit: page.limit,
      offset: page.offset,
    };
  }

  delete(workspaceId: string, id: string): R {
    const row = this.get(workspaceId, id);
    this.rows.delete(id);
    return row;
  }
}

type LinkKind = 'deployment' | 'environment';

/** A call a pull endpoint made, with the caller its route derived from the key. */
export interface PullCall {
  method: keyof Stores['pull'] | 'reportStatus';
  caller: AgentCaller;
  jobId?: string;
  jobAgentId?: string;
  claimId?: string;
}

/** What every fake store of one app shares: what a test seeds, and what it reads back. */
export class FakeWorld {
  readonly keys = new Map<string, Principal>();
  readonly audit: (AuditEventInput & { actor: AuditActor })[] = [];
  /** Selector expressions that turned out slow: a record holding one shows a warning. */
  readonly slowSelectors = new Set<string>();
  readonly systems = new RecordTable<System>('system', { uniqueBy: 'slug', updatedAt: true });
  readonly environments = new RecordTable<Environment>('environment', { uniqueBy: 'name', updatedAt: true });
  readonly deployments = new RecordTable<Deployment>('deployment', { uniqueBy: 'slug', updatedAt: true });
  readonly resources = new RecordTable<Resource>('resource', { uniqueBy: 'identifier', updatedAt: true });
  readonly holds = new RecordTable<Hold>('hold');
  /** `systemId/kind/targetId` of each link between a system and a deployment or an environment. */
  private readonly links = new Set<string>();
  readonly jobs = new Map<string, Job>();
  /** The current claim of each claimed job, by job id. */
  readonly claims = new Map<string, string>();
  readonly pullCalls: PullCall[] = [];

  /** A workspace key (scoped to one job agent when given), as `apiKeys.authenticate` answers it. */
  issueKey(workspaceId: string, options: { jobAgentId?: string; name?: string } = {}): string {
    const key = `fdk_${randomUUID()}`;
    this.keys.set(key, {
      kind: 'apiKey',
      workspaceId,
      apiKeyId: randomUUID(),
      keyName: options.name ?? 'test key',
      jobAgentId: options.jobAgentId ?? null,
    });
    return key;
  }

  /** A queued job of an agent, as job creation would have written it. */
  queueJob(workspaceId: string, jobAgentId: string): Job {
    const now = new Date();
    const job: Job = {
      id: randomUUID(),
      workspaceId,
      releaseId: randomUUID(),
      runbookRunId: null,
      deploymentId: null,
      environmentId: null,
      resourceId: null,
      jobAgentId,
      agentType: 'http-pull',
      agentEntry: 0,
      attempt: 1,
      status: 'queued',
      message: null,
      externalId: null,
      jobAgentConfig: { image: 'web:1' },
      dispatchContext: {},
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      completedAt: null,
    };
    this.jobs.set(job.id, job);
    return job;
  }

  /** Links a system to a deployment or an environment: whether the link is new. */
  link(systemId: string, kind: LinkKind, targetId: string): boolean {
    const key = `${systemId}/${kind}/${targetId}`;
    const created = !this.links.has(key);
    this.links.add(key);
    return created;
  }

  /** The systems each of these deployments or environments is linked to. */
  linkedSystems(kind: LinkKind, ids: readonly string[]): Map<string, string[]> {
    const links = [...this.links].map((link) => link.split('/') as [string, string, string]);
    return new Map(
      ids.map((id) => [
        id,
        links.filter(([, k, target]) => k === kind && target === id).map(([system]) => system),
      ]),
    );
  }

  /** A job of the caller's workspace (and agent, for a key scoped to one), or 404. */
  job(caller: AgentCaller, jobId: string): Job {
    const job = this.jobs.get(jobId);
    const visible =
      job?.workspaceId === caller.workspaceId && (!caller.jobAgentId || job.jobAgentId === caller.jobAgentId);
    if (!job || !visible) throw new NotFoundError('job', jobId);
    return job;
  }

  moveJob(job: Job, status: JobStatus): Job {
    const moved = { ...job, status, updatedAt: new Date() };
    this.jobs.set(job.id, moved);
    return moved;
  }
}

/** A fake of some of a store's methods; calling another one throws, naming it. */
function partial<S extends object>(store: string, methods: Partial<S>): S {
  return new Proxy(methods, {
    get(target, method) {
      const fake = (target as Record<PropertyKey, unknown>)[method];
      if (fake !== undefined || typeof method === 'symbol') return fake;
      return () => {
        throw new Error(`stores.${store}.${method} is not faked (test/unit/api/fakeStores.ts)`);
      };
    },
  }) as S;
}

type FakedStores = { [K in keyof Stores]?: Partial<Stores[K]> };

/** The fakes' store factory: each request's stores over the one world, acting as the request's origin. */
export function fakeStoreFactory(world: FakeWorld): StoreFactory {
  return (origin) => {
    const faked: FakedStores = {
      apiKeys: { authenticate: async (key) => world.keys.get(key) },
      audit: {
        record: async (events) => {
          world.audit.push(...events.map((event) => ({ ...event, actor: origin.actor })));
        },
      },
      selectorOverruns: {
        warnings: async (held) =>
          held.map((selectors) =>
            selectors
              .filter((selector) => selector.expression && world.slowSelectors.has(selector.expression))
              .map((selector) => ({
                path: selector.path,
                message: 'slow',
                lastSeenAt: new Date(0).toISOString(),
              })),
          ),
      },
      variables: {
        listVariables: async (_workspaceId, _deploymentId, page) => ({
          items: [],
          total: 0,
          limit: page.limit,
          offset: page.offset,
        }),
      },
      ...recordFakes(world),
      holds: holdFakes(world),
      pull: pullFakes(world),
      jobs: {
        reportStatus: async (workspaceId, jobAgentId, jobId, change) => {
          const caller = { workspaceId, jobAgentId };
          world.pullCalls.push({ method: 'reportStatus', caller, jobId });
          const job = world.job(caller, jobId);
          return world.moveJob(job, change.status ?? job.status);
        },
      },
    };
    return new Proxy({} as Stores, {
      get: (_, store: keyof Stores) => partial<object>(store, faked[store] ?? {}),
    });
  };
}

/** Systems, environments, deployments and resources: the records the records routes serve. */
function recordFakes(
  world: FakeWorld,
): Pick<FakedStores, 'systems' | 'environments' | 'deployments' | 'resources'> {
  const systemFields = (input: Parameters<Stores['systems']['create']>[1]) => ({
    name: input.name,
    slug: input.slug ?? input.name.toLowerCase().replace(/[^a-z0-9]+/g, '-'),
    description: input.description ?? null,
    metadata: input.metadata ?? {},
  });
  const resourceByIdentifier = (workspaceId: string, identifier: string) => {
    const found = world.resources.find(workspaceId, (resource) => resource.identifier === identifier);
    if (!found) throw new NotFoundError('resource', identifier);
    return found;
  };
  return {
    systems: {
      create: async (workspaceId, input) =>
        world.systems.upsert(workspaceId, randomUUID(), systemFields(input)).record,
      upsert: async (workspaceId, id, input) => world.systems.upsert(workspaceId, id, systemFields(input)),
      get: async (workspaceId, id) => world.systems.get(workspaceId, id),
      getWithLinks: async (workspaceId, id) => ({
        system: world.systems.get(workspaceId, id),
        deployments: [],
        environments: [],
        systemIds: new Map(),
      }),
      byIds: async (ids) => new Map(world.systems.byIds(ids).map((system) => [system.id, system])),
      list: async (workspaceId, page) => world.systems.page(workspaceId, page),
      delete: async (workspaceId, id) => {
        world.systems.delete(workspaceId, id);
      },
      link: async (workspaceId, systemId, kind, targetId) => {
        world.systems.get(workspaceId, systemId);
        (kind === 'deployment' ? world.deployments : world.environments).get(workspaceId, targetId);
        return { created: world.link(systemId, kind, targetId) };
      },
    },
    environments: {
      create: async (workspaceId, input) =>
        world.environments.upsert(workspaceId, randomUUID(), environmentFields(input)).record,
      upsert: async (workspaceId, id, input) =>
        world.environments.upsert(workspaceId, id, environmentFields(input)),
      get: async (workspaceId, id) => world.environments.get(workspaceId, id),
      systemIds: async (ids) => world.linkedSystems('environment', ids),
      list: async (workspaceId, page) => world.environments.page(workspaceId, page),
      delete: async (workspaceId, id) => {
        world.environments.delete(workspaceId, id);
      },
    },
    deployments: {
      create: async (workspaceId, input) =>
        world.deployments.upsert(workspaceId, randomUUID(), deploymentFields(input)).record,
      upsert: async (workspaceId, id, input) =>
        world.deployments.upsert(workspaceId, id, deploymentFields(input)),
      get: async (workspaceId, id) => world.deployments.get(workspaceId, id),
      systemIds: async (ids) => world.linkedSystems('deployment', ids),
      list: async (workspaceId, page) => world.deployments.page(workspaceId, page),
    },
    resources: {
      upsertByIdentifier: async (workspaceId, identifier, input) => {
        const existing = world.resources.find(workspaceId, (resource) => resource.identifier === identifier);
        return world.resources.upsert(workspaceId, existing?.id ?? randomUUID(), {
          identifier,
          name: input.name,
          version: input.version,
          kind: input.kind,
          config: input.config ?? {},
          metadata: input.metadata ?? {},
          providerId: null,
          deletedAt: null,
        });
      },
      getByIdentifier: async (workspaceId, identifier) => resourceByIdentifier(workspaceId, identifier),
      get: async (workspaceId, id) => world.resources.get(workspaceId, id),
      list: async (workspaceId, page) => world.resources.page(workspaceId, page),
      variables: async (ids) => new Map(ids.map((id) => [id, []])),
      delete: async (workspaceId, id) => world.resources.delete(workspaceId, id),
      deleteByIdentifier: async (workspaceId, identifier) =>
        world.resources.delete(workspaceId, resourceByIdentifier(workspaceId, identifier).id),
    },
  };
}

function environmentFields(input: Parameters<Stores['environments']['create']>[1]) {
  return {
    name: input.name,
    description: input.description ?? null,
    resourceSelector: input.resourceSelector ?? null,
    metadata: input.metadata ?? {},
  };
}

function deploymentFields(input: Parameters<Stores['deployments']['create']>[1]) {
  return {
    name: input.name,
    slug: input.slug,
    description: input.description ?? null,
    resourceSelector: input.resourceSelector ?? null,
    jobAgents: input.jobAgents ?? [],
    jobAgentSelector: input.jobAgentSelector ?? null,
    jobAgentConfig: input.jobAgentConfig ?? {},
    metadata: input.metadata ?? {},
  };
}

function holdFakes(world: FakeWorld): Partial<Stores['holds']> {
  return {
    create: async (workspaceId, principal, input) => {
      const createdBy = principal.kind === 'apiKey' ? principal : undefined;
      return world.holds.upsert(workspaceId, randomUUID(), {
        selector: input.selector,
        effect: input.effect,
        versionId: input.versionId ?? null,
        reason: input.reason,
        expiresAt: input.expiresAt ? new Date(input.expiresAt) : null,
        schedule: input.schedule ?? null,
        createdById: createdBy?.apiKeyId ?? 'admin',
        createdByName: createdBy?.keyName ?? 'operator',
      }).record;
    },
    list: async (workspaceId, filter, page) =>
      world.holds.page(workspaceId, page, (hold) => !filter.effect || hold.effect === filter.effect),
    get: async (workspaceId, holdId) => world.holds.get(workspaceId, holdId),
    delete: async (workspaceId, holdId) => world.holds.delete(workspaceId, holdId),
  };
}

const LEASE_SECONDS = 60;

function pullFakes(world: FakeWorld): Stores['pull'] {
  const lease = (job: Job, claimId: string) => ({
    jobId: job.id,
    claimId,
    leaseSeconds: LEASE_SECONDS,
    expiresAt: new Date(Date.now() + LEASE_SECONDS * 1000).toISOString(),
  });
  const { claims } = world;
  return {
    poll: async (caller, jobAgentId, status, page) => {
      world.pullCalls.push({ method: 'poll', caller, jobAgentId });
      const jobs = [...world.jobs.values()].filter(
        (job) =>
          job.workspaceId === caller.workspaceId && job.jobAgentId === jobAgentId && job.status === status,
      );
      const items = jobs.slice(page.offset, page.offset + page.limit).map((job) => ({
        id: job.id,
        status: job.status,
        releaseId: job.releaseId ?? null,
        workflowRunId: null,
        jobAgentId,
        createdAt: job.createdAt.toISOString(),
        updatedAt: job.updatedAt.toISOString(),
        deployment: null,
        environment: null,
        resource: null,
        cancelDeadline: null,
      }));
      return { items, total: jobs.length, limit: page.limit, offset: page.offset };
    },
    claim: async (caller, jobAgentId, jobId) => {
      world.pullCalls.push({ method: 'claim', caller, jobAgentId, jobId });
      const job = world.job(caller, jobId);
      if (job.status !== 'queued') {
        throw new ConflictError(
          `The job is ${job.status}, not queued: another claim got it first`,
          'not_claimable',
        );
      }
      const claimId = randomUUID();
      claims.set(jobId, claimId);
      return { job: world.moveJob(job, 'in_progress'), lease: lease(job, claimId) };
    },
    heartbeat: async (caller, jobId, claimId) => {
      world.pullCalls.push({ method: 'heartbeat', caller, jobId, claimId });
      const job = world.job(caller, jobId);
      const current = claims.get(jobId);
      if (!current || (claimId && claimId !== current)) {
        throw new ConflictError(`the job is ${job.status} and holds no such claim`, 'stale_claim');
      }
      return lease(job, current);
    },
    requeue: async (caller, jobId, claimId) => {
      world.pullCalls.push({ method: 'requeue', caller, jobId, claimId });
      const job = world.job(caller, jobId);
      if (job.status !== 'in_progress')
        throw new ConflictError(`The job is ${job.status}`, 'invalid_transition');
      claims.delete(jobId);
      return world.moveJob(job, 'queued');
    },
    legacyQueue: async (caller, jobAgentId) => {
      world.pullCalls.push({ method: 'legacyQueue', caller, jobAgentId });
      return [];
    },
  };
}
