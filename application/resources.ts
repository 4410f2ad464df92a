import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError, ValidationError } from '../domain/errors';
import type { BoundedPage, FilterPageRequest } from '../domain/pagination';
import type { CelQuery } from '../domain/selectors';
import { isRedactedMarker } from '../domain/sensitive';
import {
  ResourceProviderSchema,
  ResourceSchema,
  ResourceVariableSchema,
  type Resource,
  type ResourceVariable,
} from '../db/entities';
import { recordWriteEvent, SYSTEM_ORIGIN, type AuditOrigin } from '../db/audit';
import { conflictOnDuplicate } from '../db/errors';
import { newId } from '../db/ids';
import {
  lockWorkspaceTargets,
  syncReleaseTargets,
  deleteOwned,
  lockLive,
  lockProviderSets,
  ownedIdentifiersOutside,
  targetResource,
  upsertRows,
  type ResourceFields,
} from '../engine/targets';
import type { SecretBox } from '../db/secrets';
import { storeValue } from '../db/sensitiveValues';
import { plainRecord } from '../db/plainRecords';
import { uuidArray } from '../db/sql';
import { preparedStatement, runPrepared } from '../db/preparedStatements';
import { definedOnly, findOwned, listFiltered, type Upserted } from './common';

export interface ResourceVariableInput {
  key: string;
  value: unknown;
  sensitive: boolean;
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

export type { ResourceFields } from '../engine/targets';

/** Resources a provider's set writes per statement: memory and statement size stay bounded. */
export const SET_CHUNK = 2000;

/** The variables to give one resource, replacing its own. */
interface VariablesWrite {
  resourceId: string;
  workspaceId: string;
  variables: ResourceVariableInput[];
  /** Where `variables` sit in the request, for the path of an error about one of them. */
  variablesPath: string;
}

/**
 * One entry of a provider's set, in the order rows are locked: to upsert (`index` in the request,
 * `id` the one it takes if new, made in the request's order) or to delete.
 */
type SetEntry =
  { identifier: string; input: ProviderResourceInput; index: number; id: string } | { identifier: string };

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

const VARIABLES_OF_RESOURCES = preparedStatement(
  'variables_of_resources',
  'SELECT * FROM resource_variable WHERE resource_id = ANY($1::uuid[]) ORDER BY key',
);

export class ResourceStore {
  constructor(
    private readonly em: EntityManager,
    private readonly secrets: SecretBox,
    /** The request the writes are: a resource's upsert and a provider's set write its event themselves. */
    private readonly origin: AuditOrigin = SYSTEM_ORIGIN,
  ) {}

  /**
   * PUT by identifier: creates the live resource with that identifier, or replaces its fields, in
   * one statement, so two first PUTs of one identifier at once both succeed, the later replacing.
   */
  upsertByIdentifier(
    workspaceId: string,
    identifier: string,
    input: ResourceInput,
  ): Promise<Upserted<Resource>> {
    return this.write(workspaceId, 'shared', async (em) => {
      const fields = fieldsOf({ ...input, identifier });
      // One row: the upsert takes its lock. Its targets are computed whether or not it moved (one
      // resource's selectors cost less than a round trip to find out); unchanged, nothing is written.
      const [written] = await upsertRows(em, workspaceId, [fields], null, new Map());
      const { row, created } = written!;
      if (input.variables) {
        await this.replaceVariables(em, [
          { resourceId: row.id, workspaceId, variables: input.variables, variablesPath: 'body.variables' },
        ]);
      }
      await syncReleaseTargets(em, workspaceId, { resources: [targetResource(row)] });
      await recordWriteEvent(em, this.origin, { id: row.id, created });
      // A plain record, not an entity the identity map would merge and snapshot (7 % of the API's
      // CPU per PUT): nothing flushes it, the upsert wrote it.
      return { record: plainRecord(em, ResourceSchema, row), created };
    });
  }

  /** PATCH by id (docs/behaviour.md "Resource"): only the given fields change; `variables`, when given, replace all. */
  patch(workspaceId: string, id: string, patch: ResourcePatch): Promise<Resource> {
    return this.write(workspaceId, 'shared', async (em) => {
      const resource = await this.lockOwned(em, workspaceId, id);
      const { variables, ...changes } = patch;
      const fields = { ...pickFields(resource), ...definedOnly(changes) };
      const moved = selectorFacts(pickFields(resource)) !== selectorFacts(fields);
      em.assign(resource, fields);
      await em.flush();
      if (variables) {
        await this.replaceVariables(em, [
          { resourceId: id, workspaceId, variables, variablesPath: 'body.variables' },
        ]);
      }
      if (moved) await syncReleaseTargets(em, workspaceId, { resources: [{ id, ...fields }] });
      return resource;
    });
  }

  /** The live resource, its row locked until commit: its targets are this transaction's to compute. */
  private async lockOwned(em: EntityManager, workspaceId: string, id: string): Promise<Resource> {
    const resource = await em.findOne(ResourceSchema, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!resource || resource.workspaceId !== workspaceId || resource.deletedAt) {
      throw new NotFoundError('resource', id);
    }
    return resource;
  }

  /**
   * A provider's set (PUT …/resource-providers/{providerId}/set), in one transaction: the provider's
   * live resources become exactly `resources`. An identifier that names no live resource creates
   * one; one that does replaces it, keeping its id, and the provider takes it over, whoever owned
   * it (one identifier names one live resource of the workspace, and the latest set describing it
   * wins). The provider's resources the set leaves out are deleted, as DELETE deletes them.
   * Variables given replace the resource's; left out, they stay as they are (as with PUT).
   *
   * Written `SET_CHUNK` resources per statement, in the byte order of their identifiers, those left
   * out among them; each chunk's targets are computed before the next chunk is read, and nothing of
   * a chunk stays in memory after it.
   */
  setForProvider(
    workspaceId: string,
    providerId: string,
    resources: ProviderResourceInput[],
  ): Promise<ProviderSetOutcome> {
    return this.write(workspaceId, 'shared', async (em) => {
      await findOwned(em, ResourceProviderSchema, workspaceId, providerId, 'resource provider');
      await lockProviderSets(em, providerId);
      const identifiers = resources.map((input) => input.identifier);
      const dropped = await ownedIdentifiersOutside(em, workspaceId, providerId, new Set(identifiers));
      const entries: SetEntry[] = [
        ...resources.map((input, index) => ({ identifier: input.identifier, input, index, id: newId() })),
        ...dropped.map((identifier) => ({ identifier })),
      ];
      // Byte order, as collation "C" sorts them in engine/targets/resourceRows.ts; each key encoded once.
      const keys = new Map(entries.map((entry) => [entry, Buffer.from(entry.identifier, 'utf8')]));
      entries.sort((a, b) => Buffer.compare(keys.get(a)!, keys.get(b)!));
      keys.clear();
      const outcome: ProviderSetOutcome = { created: 0, replaced: 0, deleted: 0 };
      for (let start = 0; start < entries.length; start += SET_CHUNK) {
        const chunk = entries.slice(start, start + SET_CHUNK);
        const written = await this.writeSetChunk(em, workspaceId, providerId, chunk);
        outcome.created += written.created;
        outcome.replaced += written.replaced;
        outcome.deleted += written.deleted;
        em.clear();
      }
      await recordWriteEvent(em, this.origin);
      return outcome;
    });
  }

  private async writeSetChunk(
    em: EntityManager,
    workspaceId: string,
    providerId: string,
    chunk: SetEntry[],
  ): Promise<ProviderSetOutcome> {
    const locked = await lockLive(
      em,
      workspaceId,
      chunk.map((entry) => entry.identifier),
    );
    const upserts = chunk.filter((entry) => 'input' in entry);
    const written = await upsertRows(
      em,
      workspaceId,
      upserts.map((entry) => ({ ...fieldsOf(entry.input), id: entry.id })),
      providerId,
      locked,
    );
    const goneIds = await deleteOwned(
      em,
      workspaceId,
      providerId,
      chunk.filter((entry) => !('input' in entry)).map((entry) => entry.identifier),
    );
    const idOf = new Map(written.map(({ row }) => [row.identifier, row.id]));
    await this.replaceVariables(
      em,
      upserts
        .filter((entry) => entry.input.variables)
        .map((entry) => ({
          resourceId: idOf.get(entry.identifier)!,
          workspaceId,
          variables: entry.input.variables!,
          variablesPath: `body.resources[${entry.index}].variables`,
        })),
    );
    const resources = written.filter((write) => write.moved).map(({ row }) => targetResource(row));
    if (resources.length > 0 || goneIds.length > 0) {
      await syncReleaseTargets(em, workspaceId, { resources, goneIds });
    }
    const created = written.filter((write) => write.created).length;
    return { created, replaced: written.length - created, deleted: goneIds.length };
  }

  private write<T>(
    workspaceId: string,
    mode: 'exclusive' | 'shared',
    work: (em: EntityManager) => Promise<T>,
  ): Promise<T> {
    return conflictOnDuplicate(
      () =>
        this.em.transactional(async (em) => {
          await lockWorkspaceTargets(em, workspaceId, mode);
          return work(em);
        }),
      'Another live resource in this workspace already has that identifier',
    );
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
      await this.replaceVariables(em, [
        { resourceId: resource.id, workspaceId, variables, variablesPath: 'body' },
      ]);
      return resource;
    });
  }

  /** Each resource that carries `variables` gets exactly those, through the unit of work. */
  private async replaceVariables(em: EntityManager, replacing: VariablesWrite[]): Promise<void> {
    if (replacing.length === 0) return;
    const resourceIds = replacing.map((write) => write.resourceId);
    const rows = await em.find(ResourceVariableSchema, { resourceId: { $in: resourceIds } });
    for (const { resourceId, workspaceId, variables, variablesPath } of replacing) {
      const secrets = this.secrets.forRecord(workspaceId, 'resource', resourceId);
      const stored = new Map(rows.filter((v) => v.resourceId === resourceId).map((v) => [v.key, v]));
      variables.forEach((variable, index) => {
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
    page: FilterPageRequest,
    filter?: CelQuery<'resource'>,
  ): Promise<BoundedPage<Resource>> {
    return listFiltered(this.em, workspaceId, ResourceSchema, { workspaceId, deletedAt: null }, page, filter);
  }

  /**
   * Variables of each resource, as stored (sensitive ones sealed): plain records, read for an answer
   * (every PUT's), never written back through the ORM.
   */
  async variables(resourceIds: string[]): Promise<Map<string, ResourceVariable[]>> {
    const rows = await runPrepared<Record<string, unknown>>(this.em, VARIABLES_OF_RESOURCES, [
      uuidArray(resourceIds),
    ]);
    const map = new Map<string, ResourceVariable[]>(resourceIds.map((id) => [id, []]));
    for (const row of rows) {
      const variable = plainRecord(this.em, ResourceVariableSchema, row);
      map.get(variable.resourceId)!.push(variable);
    }
    return map;
  }

  /** Sets `deletedAt` and removes the resource's release targets. */
  delete(workspaceId: string, id: string): Promise<Resource> {
    return this.write(workspaceId, 'shared', async (em) => {
      const resource = await this.lockOwned(em, workspaceId, id);
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
