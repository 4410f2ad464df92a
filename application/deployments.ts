import type { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError, NotFoundError } from '../domain/errors';
import type { BoundedPage, FilterPageRequest } from '../domain/pagination';
import type { CelQuery } from '../domain/selectors';
import { DeploymentSchema, type Deployment, type JobAgentEntry } from '../db/entities';
import { conflictOnDuplicate } from '../db/errors';
import { newId } from '../db/ids';
import { lockWorkspaceTargets, removeReleaseTargets, syncReleaseTargets } from '../engine/targets';
import type { SecretBox } from '../db/secrets';
import { sealConfig } from '../db/sensitiveValues';
import { findOwned, linkedSystemIds, listFiltered, type Upserted } from './common';

export interface DeploymentInput {
  name: string;
  slug: string;
  description?: string | null;
  resourceSelector?: string | null;
  jobAgents?: JobAgentEntry[];
  jobAgentSelector?: string | null;
  jobAgentConfig?: Record<string, unknown>;
  metadata?: Record<string, string>;
}

export class DeploymentStore {
  constructor(
    private readonly em: EntityManager,
    private readonly secrets: SecretBox,
  ) {}

  async create(workspaceId: string, input: DeploymentInput): Promise<Deployment> {
    return (await this.upsert(workspaceId, newId(), input)).record;
  }

  upsert(workspaceId: string, id: string, input: DeploymentInput): Promise<Upserted<Deployment>> {
    return conflictOnDuplicate(
      () =>
        this.em.transactional(async (em) => {
          const existing = await em.findOne(DeploymentSchema, { id });
          if (existing && existing.workspaceId !== workspaceId) throw new NotFoundError('deployment', id);
          const fields = {
            name: input.name,
            slug: input.slug,
            description: input.description ?? null,
            resourceSelector: input.resourceSelector ?? null,
            jobAgents: (input.jobAgents ?? []).map((entry, index) => ({
              ...entry,
              config: sealConfig(
                this.secrets.forRecord(workspaceId, 'deployment', id),
                entry.config,
                existing?.jobAgents.find((previous) => previous.ref === entry.ref)?.config,
                `body.jobAgents[${index}].config`,
              ),
            })),
            jobAgentSelector: input.jobAgentSelector ?? null,
            jobAgentConfig: sealConfig(
              this.secrets.forRecord(workspaceId, 'deployment', id),
              input.jobAgentConfig ?? {},
              existing?.jobAgentConfig,
              'body.jobAgentConfig',
            ),
            metadata: input.metadata ?? {},
          };
          const selectorChanged = !existing || existing.resourceSelector !== fields.resourceSelector;
          const record = existing
            ? em.assign(existing, fields)
            : em.create(DeploymentSchema, { id, workspaceId, ...fields });
          await lockWorkspaceTargets(em, workspaceId);
          // Names are unique as Ctrlplane's are (409); the workspace lock orders concurrent writes.
          const [taken] = await em.execute<{ id: string }[]>(
            'SELECT id FROM deployment WHERE workspace_id = ? AND name = ? AND id <> ? LIMIT 1',
            [workspaceId, fields.name, id],
          );
          if (taken) {
            throw new ConflictError(
              `A deployment named "${fields.name}" already exists in this workspace`,
              'duplicate_name',
            );
          }
          await em.flush();
          if (selectorChanged) await syncReleaseTargets(em, workspaceId, { deploymentIds: [id] });
          return { record, created: !existing };
        }),
      `A deployment with slug "${input.slug}" already exists in this workspace`,
    );
  }

  get(workspaceId: string, id: string): Promise<Deployment> {
    return findOwned(this.em, DeploymentSchema, workspaceId, id, 'deployment');
  }

  /** Names need not be unique; a name shared by several deployments is ambiguous (409). */
  async getByName(workspaceId: string, name: string): Promise<Deployment> {
    const found = await this.em.find(DeploymentSchema, { workspaceId, name }, { limit: 2 });
    if (found.length === 0) throw new NotFoundError('deployment named', name);
    if (found.length > 1)
      throw new ConflictError(`Several deployments are named "${name}"; use the id or slug`, 'ambiguous');
    return found[0]!;
  }

  list(
    workspaceId: string,
    page: FilterPageRequest,
    filter?: CelQuery<'deployment'>,
  ): Promise<BoundedPage<Deployment>> {
    return listFiltered(this.em, workspaceId, DeploymentSchema, { workspaceId }, page, filter);
  }

  /** The systems each deployment is linked to. */
  systemIds(deploymentIds: string[]): Promise<Map<string, string[]>> {
    return linkedSystemIds(this.em, 'deployment', deploymentIds);
  }

  delete(workspaceId: string, id: string): Promise<void> {
    return this.em.transactional(async (em) => {
      const deployment = await findOwned(em, DeploymentSchema, workspaceId, id, 'deployment');
      await lockWorkspaceTargets(em, workspaceId);
      await removeReleaseTargets(em, workspaceId, { deploymentIds: [id] });
      em.remove(deployment);
      await em.flush();
    });
  }
}
