import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError, ValidationError } from '../../domain/errors';
import type { Page, PageRequest } from '../../domain/pagination';
import { isRedactedMarker } from '../../domain/sensitive';
import { ResourceSchema, ResourceVariableSchema, type Resource, type ResourceVariable } from '../entities';
import { conflictOnDuplicate } from '../errors';
import { newId } from '../ids';
import { lockWorkspaceTargets, syncReleaseTargets } from '../releaseTargetSync';
import type { SecretBox } from '../secrets';
import { storeValue } from '../sensitiveValues';
import { definedOnly, findOwned, listFiltered, type Upserted } from './common';

export interface ResourceVariableInput {
  key: string;
  value: unknown;
  sensitive: boolean;
}

export interface ResourceFields {
  name: string;
  version: string;
  kind: string;
  identifier: string;
  config: Record<string, unknown>;
  metadata: Record<string, string>;
}

export type ResourceInput = Omit<ResourceFields, 'identifier' | 'config' | 'metadata'> &
  Partial<Pick<ResourceFields, 'config' | 'metadata'>> & { variables?: ResourceVariableInput[] };

export type ResourcePatch = Partial<ResourceFields> & { variables?: ResourceVariableInput[] };

/** The fields selectors can see: when none changes, no target can. */
function selectorFacts(resource: ResourceFields): string {
  const { name, version, kind, identifier, config, metadata } = resource;
  return JSON.stringify([name, version, kind, identifier, config, metadata]);
}

export class ResourceStore {
  constructor(
    private readonly em: EntityManager,
    private readonly secrets: SecretBox,
  ) {}

  /** PUT by identifier: creates the live resource with that identifier, or replaces its fields. */
  upsertByIdentifier(
    workspaceId: string,
    identifier: string,
    input: ResourceInput,
  ): Promise<Upserted<Resource>> {
    return this.write(workspaceId, async (em) => {
      const existing = await em.findOne(ResourceSchema, { workspaceId, identifier, deletedAt: null });
      const fields: ResourceFields = {
        name: input.name,
        version: input.version,
        kind: input.kind,
        identifier,
        config: input.config ?? {},
        metadata: input.metadata ?? {},
      };
      if (existing)
        return { record: await this.apply(em, existing, fields, input.variables), created: false };
      const record = em.create(ResourceSchema, {
        id: newId(),
        workspaceId,
        ...fields,
        providerId: null,
        deletedAt: null,
      });
      return { record: await this.apply(em, record, fields, input.variables, true), created: true };
    });
  }

  /** PATCH by id (SPEC "Resources"): only the given fields change; `variables`, when given, replace all. */
  patch(workspaceId: string, id: string, patch: ResourcePatch): Promise<Resource> {
    return this.write(workspaceId, async (em) => {
      const resource = await findOwned(em, ResourceSchema, workspaceId, id, 'resource');
      if (resource.deletedAt) throw new NotFoundError('resource', id);
      const { variables, ...changes } = patch;
      const fields = { ...pickFields(resource), ...definedOnly(changes) };
      return this.apply(em, resource, fields, variables);
    });
  }

  private write<T>(workspaceId: string, work: (em: EntityManager) => Promise<T>): Promise<T> {
    return conflictOnDuplicate(
      () =>
        this.em.transactional(async (em) => {
          await lockWorkspaceTargets(em, workspaceId);
          return work(em);
        }),
      'Another live resource in this workspace already has that identifier',
    );
  }

  private async apply(
    em: EntityManager,
    resource: Resource,
    fields: ResourceFields,
    variables: ResourceVariableInput[] | undefined,
    created = false,
  ): Promise<Resource> {
    const before = created ? undefined : selectorFacts(pickFields(resource));
    em.assign(resource, fields);
    await em.flush();
    if (variables) await this.replaceVariables(em, resource, variables);
    if (before !== selectorFacts(fields)) {
      await syncReleaseTargets(em, resource.workspaceId, { resources: [{ id: resource.id, ...fields }] });
    }
    return resource;
  }

  /** Ctrlplane's bulk update: the live resource's variables become exactly `variables`. */
  setVariables(
    workspaceId: string,
    identifier: string,
    variables: ResourceVariableInput[],
  ): Promise<Resource> {
    return this.em.transactional(async (em) => {
      const resource = await em.findOne(ResourceSchema, { workspaceId, identifier, deletedAt: null });
      if (!resource) throw new NotFoundError('resource with identifier', identifier);
      await this.replaceVariables(em, resource, variables);
      return resource;
    });
  }

  /** The resource's variables become exactly `variables`, through the unit of work. */
  private async replaceVariables(
    em: EntityManager,
    { id: resourceId, workspaceId }: Resource,
    variables: ResourceVariableInput[],
  ): Promise<void> {
    const secrets = this.secrets.forRecord(workspaceId, 'resource', resourceId);
    const stored = new Map((await em.find(ResourceVariableSchema, { resourceId })).map((v) => [v.key, v]));
    variables.forEach((variable, index) => {
      const current = stored.get(variable.key);
      stored.delete(variable.key);
      let value: unknown;
      if (variable.sensitive && isRedactedMarker(variable.value)) {
        if (!current?.sensitive) {
          throw new ValidationError('A sensitive value can only be kept if one is stored', [
            {
              path: `body.variables[${index}].value`,
              message: 'no stored value to keep; send the value itself',
            },
          ]);
        }
        value = current.value;
      } else {
        value = storeValue(secrets, variable.value, variable.sensitive);
      }
      if (current) em.assign(current, { value, sensitive: variable.sensitive });
      else
        em.create(ResourceVariableSchema, {
          resourceId,
          key: variable.key,
          value,
          sensitive: variable.sensitive,
        });
    });
    for (const gone of stored.values()) em.remove(gone);
    await em.flush();
  }

  /** By id, including a deleted resource (its `deletedAt` says so). */
  get(workspaceId: string, id: string): Promise<Resource> {
    return findOwned(this.em, ResourceSchema, workspaceId, id, 'resource');
  }

  async getByIdentifier(workspaceId: string, identifier: string): Promise<Resource> {
    const resource = await this.em.findOne(ResourceSchema, { workspaceId, identifier, deletedAt: null });
    if (!resource) throw new NotFoundError('resource with identifier', identifier);
    return resource;
  }

  list(
    workspaceId: string,
    page: PageRequest,
    matches?: (resource: Resource) => boolean,
  ): Promise<Page<Resource>> {
    return listFiltered(this.em, ResourceSchema, { workspaceId, deletedAt: null }, page, matches);
  }

  /** Variables of each resource, as stored (sensitive ones sealed). */
  async variables(resourceIds: string[]): Promise<Map<string, ResourceVariable[]>> {
    const rows = await this.em.find(
      ResourceVariableSchema,
      { resourceId: resourceIds },
      { orderBy: { key: 'asc' } },
    );
    const map = new Map<string, ResourceVariable[]>(resourceIds.map((id) => [id, []]));
    for (const row of rows) map.get(row.resourceId)!.push(row);
    return map;
  }

  /** Sets `deletedAt` and removes the resource's release targets. */
  delete(workspaceId: string, id: string): Promise<Resource> {
    return this.write(workspaceId, async (em) => {
      const resource = await findOwned(em, ResourceSchema, workspaceId, id, 'resource');
      if (resource.deletedAt) throw new NotFoundError('resource', id);
      resource.deletedAt = new Date();
      await em.flush();
      await syncReleaseTargets(em, workspaceId, { resourceIds: [id] });
      return resource;
    });
  }

  async deleteByIdentifier(workspaceId: string, identifier: string): Promise<Resource> {
    return this.delete(workspaceId, (await this.getByIdentifier(workspaceId, identifier)).id);
  }
}

function pickFields(resource: Resource): ResourceFields {
  const { name, version, kind, identifier, config, metadata } = resource;
  return { name, version, kind, identifier, config, metadata };
}
