import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError, ValidationError } from '../domain/errors';
import type { Page, PageRequest } from '../domain/pagination';
import { slugify } from '../domain/slug';
import {
  DeploymentSchema,
  EnvironmentSchema,
  SystemDeploymentSchema,
  SystemEnvironmentSchema,
  SystemSchema,
  type Deployment,
  type Environment,
  type System,
} from '../db/entities';
import { conflictOnDuplicate } from '../db/errors';
import { newId } from '../db/ids';
import { lockWorkspaceTargets, syncReleaseTargets } from '../engine/targets';
import { findOwned, linkedSystemIds, listPage, type Upserted } from './common';

export interface SystemInput {
  name: string;
  slug?: string;
  description?: string | null;
  metadata?: Record<string, string>;
}

export interface SystemWithLinks {
  system: System;
  deployments: Deployment[];
  environments: Environment[];
  /** The systems of each linked deployment and environment, this one among them. */
  systemIds: Map<string, string[]>;
}

type LinkKind = 'deployment' | 'environment';

export class SystemStore {
  constructor(private readonly em: EntityManager) {}

  private slugOf(input: SystemInput): string {
    const slug = input.slug ?? slugify(input.name);
    if (!slug)
      throw new ValidationError('Invalid system', [
        { path: 'body.name', message: 'needs a letter or digit' },
      ]);
    return slug;
  }

  create(workspaceId: string, input: SystemInput): Promise<System> {
    return this.upsert(workspaceId, newId(), input).then((result) => result.record);
  }

  upsert(workspaceId: string, id: string, input: SystemInput): Promise<Upserted<System>> {
    const slug = this.slugOf(input);
    return conflictOnDuplicate(async () => {
      const existing = await this.em.findOne(SystemSchema, { id });
      if (existing && existing.workspaceId !== workspaceId) throw new NotFoundError('system', id);
      const fields = {
        name: input.name,
        slug,
        description: input.description ?? null,
        metadata: input.metadata ?? {},
      };
      const record = existing
        ? this.em.assign(existing, fields)
        : this.em.create(SystemSchema, { id, workspaceId, ...fields });
      await this.em.flush();
      return { record, created: !existing };
    }, `A system with slug "${slug}" already exists in this workspace`);
  }

  get(workspaceId: string, id: string): Promise<System> {
    return findOwned(this.em, SystemSchema, workspaceId, id, 'system');
  }

  async getWithLinks(workspaceId: string, id: string): Promise<SystemWithLinks> {
    const system = await this.get(workspaceId, id);
    const [deploymentLinks, environmentLinks] = await Promise.all([
      this.em.find(SystemDeploymentSchema, { systemId: id }),
      this.em.find(SystemEnvironmentSchema, { systemId: id }),
    ]);
    const [deployments, environments] = await Promise.all([
      this.em.find(
        DeploymentSchema,
        { id: deploymentLinks.map((l) => l.deploymentId) },
        { orderBy: { createdAt: 'asc', id: 'asc' } },
      ),
      this.em.find(
        EnvironmentSchema,
        { id: environmentLinks.map((l) => l.environmentId) },
        { orderBy: { createdAt: 'asc', id: 'asc' } },
      ),
    ]);
    const [deploymentSystems, environmentSystems] = await Promise.all([
      linkedSystemIds(
        this.em,
        'deployment',
        deployments.map((d) => d.id),
      ),
      linkedSystemIds(
        this.em,
        'environment',
        environments.map((e) => e.id),
      ),
    ]);
    return {
      system,
      deployments,
      environments,
      systemIds: new Map([...deploymentSystems, ...environmentSystems]),
    };
  }

  /** The systems of these ids, by id. */
  async byIds(ids: string[]): Promise<Map<string, System>> {
    const systems =
      ids.length > 0 ? await this.em.find(SystemSchema, { id: { $in: [...new Set(ids)] } }) : [];
    return new Map(systems.map((system) => [system.id, system]));
  }

  list(workspaceId: string, page: PageRequest): Promise<Page<System>> {
    return listPage(this.em, SystemSchema, { workspaceId }, page);
  }

  /** Deleting a system unlinks everything in it; the targets that relied on it go. */
  delete(workspaceId: string, id: string): Promise<void> {
    return this.em.transactional(async (em) => {
      const system = await findOwned(em, SystemSchema, workspaceId, id, 'system');
      await lockWorkspaceTargets(em, workspaceId);
      const deploymentIds = (await em.find(SystemDeploymentSchema, { systemId: id })).map(
        (l) => l.deploymentId,
      );
      em.remove(system);
      await em.flush();
      if (deploymentIds.length > 0) await syncReleaseTargets(em, workspaceId, { deploymentIds });
    });
  }

  /** Links a deployment or an environment; `created` is false when the link already existed. */
  link(
    workspaceId: string,
    systemId: string,
    kind: LinkKind,
    targetId: string,
  ): Promise<{ created: boolean }> {
    return this.em.transactional(async (em) => {
      await this.assertLinkable(em, workspaceId, systemId, kind, targetId);
      await lockWorkspaceTargets(em, workspaceId);
      const inserted = await em.execute(
        `INSERT INTO system_${kind} (system_id, ${kind}_id, workspace_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING RETURNING 1`,
        [systemId, targetId, workspaceId],
      );
      if (inserted.length > 0) await syncReleaseTargets(em, workspaceId, scopeOf(kind, targetId));
      return { created: inserted.length > 0 };
    });
  }

  async getLink(workspaceId: string, systemId: string, kind: LinkKind, targetId: string): Promise<void> {
    await this.assertLinkable(this.em, workspaceId, systemId, kind, targetId);
    const rows = await this.em.execute(
      `SELECT 1 FROM system_${kind} WHERE system_id = ? AND ${kind}_id = ?`,
      [systemId, targetId],
    );
    if (rows.length === 0) throw new NotFoundError(`link of ${kind}`, targetId);
  }

  unlink(workspaceId: string, systemId: string, kind: LinkKind, targetId: string): Promise<void> {
    return this.em.transactional(async (em) => {
      await this.assertLinkable(em, workspaceId, systemId, kind, targetId);
      await lockWorkspaceTargets(em, workspaceId);
      const deleted = await em.execute(
        `DELETE FROM system_${kind} WHERE system_id = ? AND ${kind}_id = ? RETURNING 1`,
        [systemId, targetId],
      );
      if (deleted.length === 0) throw new NotFoundError(`link of ${kind}`, targetId);
      await syncReleaseTargets(em, workspaceId, scopeOf(kind, targetId));
    });
  }

  private async assertLinkable(
    em: EntityManager,
    workspaceId: string,
    systemId: string,
    kind: LinkKind,
    targetId: string,
  ): Promise<void> {
    await findOwned(em, SystemSchema, workspaceId, systemId, 'system');
    if (kind === 'deployment') await findOwned(em, DeploymentSchema, workspaceId, targetId, 'deployment');
    else await findOwned(em, EnvironmentSchema, workspaceId, targetId, 'environment');
  }
}

function scopeOf(kind: LinkKind, id: string) {
  return kind === 'deployment' ? { deploymentIds: [id] } : { environmentIds: [id] };
}
