import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError } from '../domain/errors';
import type { BoundedPage, FilterPageRequest } from '../domain/pagination';
import type { CelQuery } from '../domain/selectors';
import { EnvironmentSchema, type Environment } from '../db/entities';
import { conflictOnDuplicate } from '../db/errors';
import { newId } from '../db/ids';
import { lockWorkspaceTargets, removeReleaseTargets, syncReleaseTargets } from '../engine/targets';
import { findOwned, linkedSystemIds, listFiltered, type Upserted } from './common';

export interface EnvironmentInput {
  name: string;
  description?: string | null;
  resourceSelector?: string | null;
  metadata?: Record<string, string>;
}

export class EnvironmentStore {
  constructor(private readonly em: EntityManager) {}

  async create(workspaceId: string, input: EnvironmentInput): Promise<Environment> {
    return (await this.upsert(workspaceId, newId(), input)).record;
  }

  upsert(workspaceId: string, id: string, input: EnvironmentInput): Promise<Upserted<Environment>> {
    return conflictOnDuplicate(
      () =>
        this.em.transactional(async (em) => {
          const existing = await em.findOne(EnvironmentSchema, { id });
          if (existing && existing.workspaceId !== workspaceId) throw new NotFoundError('environment', id);
          const fields = {
            name: input.name,
            description: input.description ?? null,
            resourceSelector: input.resourceSelector ?? null,
            metadata: input.metadata ?? {},
          };
          const selectorChanged = !existing || existing.resourceSelector !== fields.resourceSelector;
          const record = existing
            ? em.assign(existing, fields)
            : em.create(EnvironmentSchema, { id, workspaceId, ...fields });
          await lockWorkspaceTargets(em, workspaceId);
          await em.flush();
          if (selectorChanged) await syncReleaseTargets(em, workspaceId, { environmentIds: [id] });
          return { record, created: !existing };
        }),
      `An environment named "${input.name}" already exists in this workspace`,
    );
  }

  get(workspaceId: string, id: string): Promise<Environment> {
    return findOwned(this.em, EnvironmentSchema, workspaceId, id, 'environment');
  }

  async getByName(workspaceId: string, name: string): Promise<Environment> {
    const environment = await this.em.findOne(EnvironmentSchema, { workspaceId, name });
    if (!environment) throw new NotFoundError('environment named', name);
    return environment;
  }

  /** The systems each environment is linked to. */
  systemIds(environmentIds: string[]): Promise<Map<string, string[]>> {
    return linkedSystemIds(this.em, 'environment', environmentIds);
  }

  list(
    workspaceId: string,
    page: FilterPageRequest,
    filter?: CelQuery<'environment'>,
  ): Promise<BoundedPage<Environment>> {
    return listFiltered(this.em, workspaceId, EnvironmentSchema, { workspaceId }, page, filter);
  }

  delete(workspaceId: string, id: string): Promise<void> {
    return this.em.transactional(async (em) => {
      const environment = await findOwned(em, EnvironmentSchema, workspaceId, id, 'environment');
      await lockWorkspaceTargets(em, workspaceId);
      await removeReleaseTargets(em, workspaceId, { environmentIds: [id] });
      em.remove(environment);
      await em.flush();
    });
  }
}
