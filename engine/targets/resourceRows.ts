import type { EntityManager } from '@mikro-orm/postgresql';
import type { TargetResource } from '../../domain/releaseTargets';
import { newId } from '../../db/ids';
import { preparedStatement, runPrepared } from '../../db/preparedStatements';

/**
 * Set-based writes of live resources, for the writes that hold the workspace's target lock in
 * shared mode (engine/targets/releaseTargetSync.ts): single PUTs and providers' sets of up to 100,000.
 *
 * Concurrent writers of one workspace meet only on the resource rows they both touch, and every
 * writer takes those rows in one order, the identifiers' byte order (collation "C"): first the live
 * rows that exist (`lockLive`, `FOR UPDATE`), then the insertions (`upsertRows`, sorted the same
 * way), chunk after chunk in that order. So no two writers wait on each other in a cycle, and a
 * writer holding a resource's row is the only one computing that resource's targets.
 */

export interface ResourceFields {
  name: string;
  version: string;
  kind: string;
  identifier: string;
  config: Record<string, unknown>;
  metadata: Record<string, string>;
}

/** A resource row as `RETURNING resource.*` gives it. */
export interface ResourceRow {
  id: string;
  workspace_id: string;
  identifier: string;
  name: string;
  version: string;
  kind: string;
  config: Record<string, unknown>;
  metadata: Record<string, string>;
  provider_id: string | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export interface UpsertedRow {
  row: ResourceRow;
  created: boolean;
  /** Created, or a field selectors can see changed: its targets need computing. */
  moved: boolean;
}

/** What selectors can see of a resource, hashed in SQL so stored and sent JSON compare alike. */
const FACTS_SQL = 'md5(jsonb_build_array(r.name, r.version, r.kind, r.config, r.metadata)::text)';

/**
 * Locks the live resources with these identifiers, in byte order, and returns their ids and a hash
 * of their selector facts (as they are once every earlier writer has committed), by identifier.
 */
export async function lockLive(
  em: EntityManager,
  workspaceId: string,
  identifiers: readonly string[],
): Promise<Map<string, { id: string; facts: string }>> {
  if (identifiers.length === 0) return new Map();
  const rows = await em.execute<{ id: string; identifier: string; facts: string }[]>(
    `SELECT r.id, r.identifier, ${FACTS_SQL} AS facts
       FROM jsonb_array_elements_text(?::jsonb) AS k(identifier)
       JOIN resource r ON r.workspace_id = ? AND r.identifier = k.identifier AND r.deleted_at IS NULL
      ORDER BY r.identifier COLLATE "C"
        FOR UPDATE OF r`,
    [JSON.stringify(identifiers), workspaceId],
  );
  return new Map(rows.map((row) => [row.identifier, { id: row.id, facts: row.facts }]));
}

/**
 * The upsert of `upsertRows`: the workspace $1, the owner of new resources (and the new owner of
 * existing ones, when not null) $2, the resources as a JSON array $3 (each with a proposed id).
 */
const UPSERT_RESOURCES = preparedStatement(
  'upsert_resources',
  `INSERT INTO resource AS r (id, workspace_id, identifier, name, version, kind, config, metadata, provider_id)
   SELECT i.id, $1::uuid, i.identifier, i.name, i.version, i.kind, i.config, i.metadata, $2::uuid
     FROM jsonb_to_recordset($3::jsonb)
       AS i(id uuid, identifier text, name text, version text, kind text, config jsonb, metadata jsonb)
    ORDER BY i.identifier COLLATE "C"
   ON CONFLICT (workspace_id, identifier) WHERE deleted_at IS NULL DO UPDATE
      SET name = excluded.name, version = excluded.version, kind = excluded.kind,
          config = excluded.config, metadata = excluded.metadata,
          provider_id = coalesce(excluded.provider_id, r.provider_id),
          updated_at = CASE
            WHEN (r.name, r.version, r.kind, r.config, r.metadata, r.provider_id)
                 IS DISTINCT FROM (excluded.name, excluded.version, excluded.kind, excluded.config,
                                   excluded.metadata, coalesce(excluded.provider_id, r.provider_id))
            THEN now() ELSE r.updated_at END
   RETURNING r.*, ${FACTS_SQL} AS facts`,
);

/**
 * Inserts or replaces live resources by identifier in one statement, in byte order. A new one is
 * owned by `providerId` and takes the fresh id its fields propose (a provider's set makes them in
 * the set's order, so its resources list in that order: docs/api.md "Resource providers"), else a
 * new one; an existing one keeps its id, and its owner unless `providerId` is given (a provider's
 * set takes it over). `updated_at` moves only when a field does. `locked` is what `lockLive`
 * returned for these identifiers: a row it did not see (created meanwhile) counts as moved.
 */
export async function upsertRows(
  em: EntityManager,
  workspaceId: string,
  fields: readonly (ResourceFields & { id?: string })[],
  providerId: string | null,
  locked: ReadonlyMap<string, { facts: string }>,
): Promise<UpsertedRow[]> {
  if (fields.length === 0) return [];
  const proposed = fields.map((resource) => ({ ...resource, id: resource.id ?? newId() }));
  const rows = await runPrepared<ResourceRow & { facts: string }>(em, UPSERT_RESOURCES, [
    workspaceId,
    providerId,
    JSON.stringify(proposed),
  ]);
  const proposedIds = new Set(proposed.map((resource) => resource.id));
  return rows.map(({ facts, ...row }) => {
    const created = proposedIds.has(row.id);
    const before = locked.get(row.identifier);
    return { row, created, moved: created || before === undefined || before.facts !== facts };
  });
}

/**
 * Deletes (`deleted_at`) the provider's live resources with these identifiers, rows the caller
 * has locked already; returns their ids.
 */
export async function deleteOwned(
  em: EntityManager,
  workspaceId: string,
  providerId: string,
  identifiers: readonly string[],
): Promise<string[]> {
  if (identifiers.length === 0) return [];
  const rows = await em.execute<{ id: string }[]>(
    `UPDATE resource r SET deleted_at = now(), updated_at = now()
       FROM jsonb_array_elements_text(?::jsonb) AS k(identifier)
      WHERE r.workspace_id = ? AND r.identifier = k.identifier AND r.provider_id = ? AND r.deleted_at IS NULL
      RETURNING r.id`,
    [JSON.stringify(identifiers), workspaceId, providerId],
  );
  return rows.map((row) => row.id);
}

/** The identifiers of the provider's live resources that `keep` does not name. */
export async function ownedIdentifiersOutside(
  em: EntityManager,
  workspaceId: string,
  providerId: string,
  keep: ReadonlySet<string>,
): Promise<string[]> {
  const rows = await em.execute<{ identifier: string }[]>(
    'SELECT identifier FROM resource WHERE workspace_id = ? AND provider_id = ? AND deleted_at IS NULL',
    [workspaceId, providerId],
  );
  return rows.map((row) => row.identifier).filter((identifier) => !keep.has(identifier));
}

/** Sets of one provider run one at a time: the resources a set deletes are those it read as the provider's. */
export async function lockProviderSets(em: EntityManager, providerId: string): Promise<void> {
  await em.execute('SELECT pg_advisory_xact_lock(hashtextextended(?, 7312))', [providerId]);
}

export function targetResource(row: ResourceRow): TargetResource {
  const { id, name, version, kind, identifier, config, metadata } = row;
  return { id, name, version, kind, identifier, config, metadata };
}
