import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError, ValidationError } from '../domain/errors';
import type { Page, PageRequest } from '../domain/pagination';
import { ResourceProviderSchema, ResourceSchema, type Resource, type ResourceProvider } from '../db/entities';
import { conflictOnDuplicate } from '../db/errors';
import { newId } from '../db/ids';
import { lockWorkspaceTargets } from '../engine/targets';
import { listPage, type Upserted } from './common';

export interface ResourceProviderInput {
  /** The id a new provider gets; a provider that exists keeps its own. */
  id?: string;
  name: string;
  /** Replaces the provider's metadata when given; left out, it stays. */
  metadata?: Record<string, string>;
}

/**
 * Resource providers, named per workspace. Their sets live with the resources
 * (`ResourceStore.setForProvider`), which they change.
 */
export class ResourceProviderStore {
  constructor(private readonly em: EntityManager) {}

  /**
   * PUT by name: `ctrlc` sends the same name on every run (and an empty id), so the name is the key.
   * One statement inserts or finds it, so two first runs at once both get the one provider. A body
   * whose id is one of the workspace's providers under another name renames that provider, keeping
   * its id and resources: a declarative client (Terraform) renames by id, then sets resources on it.
   */
  async upsertByName(workspaceId: string, input: ResourceProviderInput): Promise<Upserted<ResourceProvider>> {
    const renamed = input.id
      ? await this.em.findOne(ResourceProviderSchema, {
          id: input.id,
          workspaceId,
          name: { $ne: input.name },
        })
      : null;
    if (renamed)
      return conflictOnDuplicate(async () => {
        this.em.assign(renamed, {
          name: input.name,
          ...(input.metadata ? { metadata: input.metadata } : {}),
        });
        await this.em.flush();
        return { record: renamed, created: false };
      }, `Another resource provider is named ${input.name}`);
    return conflictOnDuplicate(
      () =>
        this.em.transactional(async (em) => {
          const inserted = await em.execute<{ id: string }[]>(
            `INSERT INTO resource_provider (id, workspace_id, name, metadata) VALUES (?, ?, ?, ?::jsonb)
             ON CONFLICT (workspace_id, name) DO NOTHING RETURNING id`,
            [input.id ?? newId(), workspaceId, input.name, JSON.stringify(input.metadata ?? {})],
          );
          const provider = await em.findOneOrFail(ResourceProviderSchema, { workspaceId, name: input.name });
          if (input.metadata) em.assign(provider, { metadata: input.metadata });
          await em.flush();
          return { record: provider, created: inserted.length > 0 };
        }),
      `Another resource provider already has the id ${input.id ?? ''}`,
    );
  }

  async getByName(workspaceId: string, name: string): Promise<ResourceProvider> {
    const provider = await this.em.findOne(ResourceProviderSchema, { workspaceId, name });
    if (!provider) throw new NotFoundError('resource provider', name);
    return provider;
  }

  /** The provider's live resources, oldest first. */
  async resources(workspaceId: string, name: string, page: PageRequest): Promise<Page<Resource>> {
    const provider = await this.getByName(workspaceId, name);
    return listPage(this.em, ResourceSchema, { workspaceId, providerId: provider.id, deletedAt: null }, page);
  }

  /**
   * Deletes a provider that owns no live resource; one that does is refused (400, as Ctrlplane
   * answers), so its resources never lose their provider behind a caller's back: a set with no
   * resources deletes them first. Under the workspace's target lock, so no set adds one meanwhile.
   */
  deleteByName(workspaceId: string, name: string): Promise<ResourceProvider> {
    return this.em.transactional(async (em) => {
      await lockWorkspaceTargets(em, workspaceId);
      const provider = await em.findOne(ResourceProviderSchema, { workspaceId, name });
      if (!provider) throw new NotFoundError('resource provider', name);
      const owned = await em.count(ResourceSchema, { providerId: provider.id, deletedAt: null });
      if (owned > 0) {
        throw new ValidationError(
          `Resource provider "${name}" still owns ${owned} resource(s): set its resources to an empty list first`,
          [],
          'provider_in_use',
        );
      }
      em.remove(provider);
      await em.flush();
      return provider;
    });
  }
}
