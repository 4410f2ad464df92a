import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError } from '../domain/errors';
import type { Page, PageRequest } from '../domain/pagination';
import {
  DeploymentSchema,
  EnvironmentSchema,
  ReleaseTargetSchema,
  ResourceSchema,
  ResourceVariableSchema,
  SystemSchema,
  type Deployment,
  type Environment,
  type ReleaseTarget,
  type Resource,
  type ResourceVariable,
  type System,
} from '../db/entities';
import { previewReleaseTargets } from '../engine/targets';
import type { ResourceFields } from './resources';

/** One target a resource would get: its deployment and environment, and a system they share. */
export interface TargetPreview {
  system: System;
  deployment: Deployment;
  environment: Environment;
}

/** Ctrlplane's resource search: every filter narrows; text matches name or identifier. */
export interface ResourceSearch {
  identifiers?: string[];
  kinds?: string[];
  versions?: string[];
  providerIds?: string[];
  metadata?: Record<string, string>;
  query?: string;
  sortBy?: 'createdAt' | 'updatedAt' | 'name' | 'kind';
  order: 'asc' | 'desc';
  limit: number;
  offset: number;
}

/** `%`, `_` and `\` taken literally in a LIKE pattern. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (char) => `\\${char}`);

/** Reads about resources that Ctrlplane's clients make: their targets, deployments, variables, search. */
export class ResourceLookupStore {
  constructor(private readonly em: EntityManager) {}

  private async live(workspaceId: string, identifier: string): Promise<Resource> {
    const resource = await this.em.findOne(ResourceSchema, { workspaceId, identifier, deletedAt: null });
    if (!resource) throw new NotFoundError('resource with identifier', identifier);
    return resource;
  }

  /** The targets a resource with these fields would get, as a write would compute them; writes nothing. */
  async preview(
    workspaceId: string,
    resource: ResourceFields,
    page: PageRequest,
  ): Promise<Page<TargetPreview>> {
    const targets = await previewReleaseTargets(this.em, workspaceId, resource);
    const shown = targets.slice(page.offset, page.offset + page.limit);
    const byId = <T extends { id: string }>(records: T[]) =>
      new Map(records.map((record) => [record.id, record]));
    const ids = (pick: (target: (typeof shown)[number]) => string) => [...new Set(shown.map(pick))];
    const systems = byId(await this.em.find(SystemSchema, { id: { $in: ids((t) => t.systemId) } }));
    const deployments = byId(
      await this.em.find(DeploymentSchema, { id: { $in: ids((t) => t.deploymentId) } }),
    );
    const environments = byId(
      await this.em.find(EnvironmentSchema, { id: { $in: ids((t) => t.environmentId) } }),
    );
    return {
      items: shown.map((target) => ({
        system: systems.get(target.systemId)!,
        deployment: deployments.get(target.deploymentId)!,
        environment: environments.get(target.environmentId)!,
      })),
      total: targets.length,
      limit: page.limit,
      offset: page.offset,
    };
  }

  /** The deployments the live resource with this identifier is a release target of. */
  async deploymentsOf(workspaceId: string, identifier: string, page: PageRequest): Promise<Page<Deployment>> {
    const resource = await this.live(workspaceId, identifier);
    const targeted = await this.em.execute<{ deployment_id: string }[]>(
      'SELECT DISTINCT deployment_id FROM release_target WHERE resource_id = ?',
      [resource.id],
    );
    const [items, total] = await this.em.findAndCount(
      DeploymentSchema,
      { workspaceId, id: { $in: targeted.map((row) => row.deployment_id) } },
      { orderBy: { createdAt: 'asc', id: 'asc' }, limit: page.limit, offset: page.offset },
    );
    return { items, total, limit: page.limit, offset: page.offset };
  }

  /** The live resource's variables, as stored (sensitive ones sealed), by key. */
  async variablesOf(
    workspaceId: string,
    identifier: string,
    page: PageRequest,
  ): Promise<Page<ResourceVariable>> {
    const resource = await this.live(workspaceId, identifier);
    const [items, total] = await this.em.findAndCount(
      ResourceVariableSchema,
      { resourceId: resource.id },
      { orderBy: { key: 'asc' }, limit: page.limit, offset: page.offset },
    );
    return { items, total, limit: page.limit, offset: page.offset };
  }

  /**
   * The resource's release target in a deployment. A resource in several environments of the
   * deployment has one target per environment: the one of the oldest environment is answered.
   */
  async targetInDeployment(
    workspaceId: string,
    identifier: string,
    deploymentId: string,
  ): Promise<ReleaseTarget> {
    const resource = await this.live(workspaceId, identifier);
    const [row] = await this.em.execute<{ environment_id: string }[]>(
      `SELECT t.environment_id FROM release_target t JOIN environment e ON e.id = t.environment_id
        WHERE t.workspace_id = ? AND t.resource_id = ? AND t.deployment_id = ?
        ORDER BY e.created_at, e.id LIMIT 1`,
      [workspaceId, resource.id, deploymentId],
    );
    if (!row) throw new NotFoundError('release target of the resource in deployment', deploymentId);
    return this.em.findOneOrFail(ReleaseTargetSchema, {
      resourceId: resource.id,
      environmentId: row.environment_id,
      deploymentId,
    });
  }

  /** Live resources matching every given filter, sorted as asked (then by id, so pages never overlap). */
  async search(workspaceId: string, search: ResourceSearch): Promise<Page<Resource>> {
    const where: Record<string, unknown> = { workspaceId, deletedAt: null };
    if (search.identifiers) where.identifier = { $in: search.identifiers };
    if (search.kinds) where.kind = { $in: search.kinds };
    if (search.versions) where.version = { $in: search.versions };
    if (search.providerIds) where.providerId = { $in: search.providerIds };
    if (search.metadata && Object.keys(search.metadata).length > 0) where.metadata = search.metadata;
    if (search.query) {
      const pattern = `%${likeLiteral(search.query)}%`;
      where.$or = [{ name: { $ilike: pattern } }, { identifier: { $ilike: pattern } }];
    }
    const [items, total] = await this.em.findAndCount(ResourceSchema, where as never, {
      orderBy: { [search.sortBy ?? 'createdAt']: search.order, id: search.order } as never,
      limit: search.limit,
      offset: search.offset,
    });
    return { items, total, limit: search.limit, offset: search.offset };
  }
}
