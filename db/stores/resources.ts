import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError, ValidationError } from '../../domain/errors';
import type { Page, PageRequest } from '../../domain/pagination';
import { isRedactedMarker } from '../../domain/sensitive';
import {
  ResourceProviderSchema,
  ResourceSchema,
  ResourceVariableSchema,
  type Resource,
  type ResourceVariable,
} from '../entities';
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

/** One resource of a provider's set. */
export type ProviderResourceInput = ResourceInput & { identifier: string };

/** What a provider's set did. */
export interface ProviderSetOutcome {
  created: number;
  replaced: number;
  deleted: number;
}

/** One resource to write: its new fields, and its variables when they are to be replaced. */
interface ResourceWrite {
  resource: Resource;
  fields: ResourceFields;
  variables?: ResourceVariableInput[];
  /** Where `variables` sit in the request, for the path of an error about one of them. */
  variablesPath: string;
  created: boolean;
}

function fieldsOf(input: ResourceInput & { identifier: string }): ResourceFields {
  return {
    name: input.name,
    version: input.version,
    kind: input.kind,
    identifier: input.identifier,
    config: input.config ?? {},
    metadata: input.metadata ?? {},
  };
}

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
      const fields = fieldsOf({ ...input, identifier });
      const resource = existing ?? this.createResource(em, workspaceId, fields, null);
      await this.apply(em, workspaceId, [
        { resource, fields, variables: input.variables, variablesPath: 'body.variables', created: !existing },
      ]);
      return { record: resource, created: !existing };
    });
  }

  /** PATCH by id (SPEC "Resources"): only the given fields change; `variables`, when given, replace all. */
  patch(workspaceId: string, id: string, patch: ResourcePatch): Promise<Resource> {
    return this.write(workspaceId, async (em) => {
      const resource = await findOwned(em, ResourceSchema, workspaceId, id, 'resource');
      if (resource.deletedAt) throw new NotFoundError('resource', id);
      const { variables, ...changes } = patch;
      const fields = { ...pickFields(resource), ...definedOnly(changes) };
      await this.apply(em, workspaceId, [
        { resource, fields, variables, variablesPath: 'body.variables', created: false },
      ]);
      return resource;
    });
  }

  /**
   * A provider's set (PUT …/resource-providers/{providerId}/set), in one transaction: the provider's
   * live resources become exactly `resources`. An identifier that names no live resource creates
   * one; one that does replaces it, keeping its id, and the provider takes it over, whoever owned
   * it (one identifier names one live resource of the workspace, and the latest set describing it
   * wins). The provider's resources the set leaves out are deleted, as DELETE deletes them.
   * Variables given replace the resource's; left out, they stay as they are (as with PUT).
   */
  setForProvider(
    workspaceId: string,
    providerId: string,
    resources: ProviderResourceInput[],
  ): Promise<ProviderSetOutcome> {
    return this.write(workspaceId, async (em) => {
      await findOwned(em, ResourceProviderSchema, workspaceId, providerId, 'resource provider');
      const identifiers = resources.map((input) => input.identifier);
      const live =
        identifiers.length > 0
          ? await em.find(ResourceSchema, { workspaceId, identifier: { $in: identifiers }, deletedAt: null })
          : [];
      const named = new Map(live.map((resource) => [resource.identifier, resource]));
      const writes = resources.map((input, index): ResourceWrite => {
        const fields = fieldsOf(input);
        const existing = named.get(input.identifier);
        if (existing) existing.providerId = providerId;
        return {
          resource: existing ?? this.createResource(em, workspaceId, fields, providerId),
          fields,
          variables: input.variables,
          variablesPath: `body.resources[${index}].variables`,
          created: !existing,
        };
      });
      const dropped = await em.find(ResourceSchema, {
        workspaceId,
        providerId,
        deletedAt: null,
        ...(identifiers.length > 0 ? { identifier: { $nin: identifiers } } : {}),
      });
      const deletedAt = new Date();
      for (const resource of dropped) resource.deletedAt = deletedAt;
      await this.apply(
        em,
        workspaceId,
        writes,
        dropped.map((resource) => resource.id),
      );
      const created = writes.filter((write) => write.created).length;
      return { created, replaced: writes.length - created, deleted: dropped.length };
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

  private createResource(
    em: EntityManager,
    workspaceId: string,
    fields: ResourceFields,
    providerId: string | null,
  ): Resource {
    return em.create(ResourceSchema, { id: newId(), workspaceId, ...fields, providerId, deletedAt: null });
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
      const write = {
        resource,
        fields: pickFields(resource),
        variables,
        variablesPath: 'body',
        created: false,
      };
      await this.replaceVariables(em, [write]);
      return resource;
    });
  }

  /**
   * Writes the resources' fields, then the variables of those that carry some, then recomputes in
   * one pass the release targets of every resource whose selector facts changed and of the
   * resources deleted alongside (`deletedIds`, already marked), which lose theirs.
   */
  private async apply(
    em: EntityManager,
    workspaceId: string,
    writes: ResourceWrite[],
    deletedIds: string[] = [],
  ): Promise<void> {
    const moved = writes.filter(
      (write) => write.created || selectorFacts(pickFields(write.resource)) !== selectorFacts(write.fields),
    );
    for (const write of writes) em.assign(write.resource, write.fields);
    await em.flush();
    await this.replaceVariables(em, writes);
    if (deletedIds.length > 0) {
      const resourceIds = [...moved.map((write) => write.resource.id), ...deletedIds];
      await syncReleaseTargets(em, workspaceId, { resourceIds });
    } else if (moved.length > 0) {
      const resources = moved.map((write) => ({ id: write.resource.id, ...write.fields }));
      await syncReleaseTargets(em, workspaceId, { resources });
    }
  }

  /** Each resource that carries `variables` gets exactly those, through the unit of work. */
  private async replaceVariables(em: EntityManager, writes: ResourceWrite[]): Promise<void> {
    const replacing = writes.filter((write) => write.variables);
    if (replacing.length === 0) return;
    const resourceIds = replacing.map((write) => write.resource.id);
    const rows = await em.find(ResourceVariableSchema, { resourceId: { $in: resourceIds } });
    for (const { resource, variables, variablesPath } of replacing) {
      const { id: resourceId, workspaceId } = resource;
      const secrets = this.secrets.forRecord(workspaceId, 'resource', resourceId);
      const stored = new Map(rows.filter((v) => v.resourceId === resourceId).map((v) => [v.key, v]));
      variables!.forEach((variable, index) => {
        const current = stored.get(variable.key);
        stored.delete(variable.key);
        let value: unknown;
        if (variable.sensitive && isRedactedMarker(variable.value)) {
          if (!current?.sensitive) {
            throw new ValidationError('A sensitive value can only be kept if one is stored', [
              {
                path: `${variablesPath}[${index}].value`,
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
    }
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
    return listFiltered(
      this.em,
      workspaceId,
      ResourceSchema,
      { workspaceId, deletedAt: null },
      page,
      matches,
    );
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
