import type { EntitySchema, FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError } from '../../domain/errors';
import type { Page, PageRequest } from '../../domain/pagination';
import { paced } from '../pace';
import { uuidArray } from '../sql';

/** The result of a PUT: the record, and whether it was created or replaced. */
export interface Upserted<T> {
  record: T;
  created: boolean;
}

type Owned = { id: string; workspaceId: string };

/** A record of the workspace, or 404: another workspace's id is treated as unknown. */
export async function findOwned<T extends Owned>(
  em: EntityManager,
  schema: EntitySchema<T, never>,
  workspaceId: string,
  id: string,
  kind: string,
): Promise<T> {
  const record = await em.findOne(schema, { id, workspaceId } as FilterQuery<T>);
  if (!record) throw new NotFoundError(kind, id);
  return record;
}

/** One page in creation order; ties broken by the key (`id` unless given) so pages never overlap. */
export async function listPage<T extends object>(
  em: EntityManager,
  schema: EntitySchema<T, never>,
  where: FilterQuery<T>,
  page: PageRequest,
  order: 'asc' | 'desc' = 'asc',
  key: string[] = ['id'],
): Promise<Page<T>> {
  const [items, total] = await em.findAndCount(schema, where, {
    orderBy: { createdAt: order, ...Object.fromEntries(key.map((field) => [field, order])) } as never,
    limit: page.limit,
    offset: page.offset,
  });
  return { items, total, limit: page.limit, offset: page.offset };
}

/** Records a CEL-filtered list reads for one request, at most. */
export const FILTER_SCAN_LIMIT = 10_000;
/** Records a CEL-filtered list orders at a time (ids only). */
export const FILTER_BATCH = 500;
/**
 * Stored bytes (as PostgreSQL keeps them, often compressed) read and turned into records at a time:
 * turning a row into a record is CPU work that cannot be paced, so large records are read a few at
 * a time (a record of the largest size alone).
 */
export const FILTER_READ_BYTES = 64 * 1024;

/**
 * A page of the records matching a CEL filter. CEL runs in the application, so the filter goes
 * through the records in order — their ids `FILTER_BATCH` at a time, the records themselves a few
 * hundred kilobytes at a time (outside the identity map, so only the page's matches stay in
 * memory) — and counts the matches, up to `FILTER_SCAN_LIMIT` records: past that the page says
 * `scanLimit` and its total counts the matches among the records read.
 *
 * Batches are read by offset, not by key: `created_at` holds microseconds that the entity's `Date`
 * does not, so a key taken from the last record read could skip or repeat records. The scan runs in
 * the workspace's turns of paced CPU work (db/pace.ts), so other requests are served between its
 * slices; `matches` may throw to end it (a filter over its budget answers 422).
 */
export async function listFiltered<T extends { id: string }>(
  em: EntityManager,
  workspaceId: string,
  schema: EntitySchema<T, never>,
  where: FilterQuery<T>,
  page: PageRequest,
  matches: ((record: T) => boolean) | undefined,
  order: 'asc' | 'desc' = 'asc',
): Promise<Page<T>> {
  if (!matches) return listPage(em, schema, where, page, order);
  const table = em.getMetadata().get(schema.meta.className).tableName;
  return paced(workspaceId, async (pacer) => {
    const items: T[] = [];
    let total = 0;
    let scanned = 0;
    for (;;) {
      const wanted = Math.min(FILTER_BATCH, FILTER_SCAN_LIMIT - scanned);
      pacer.rest();
      const ids = (
        await em.find(schema, where, {
          fields: ['id'] as never,
          orderBy: { createdAt: order, id: order } as never,
          limit: wanted,
          offset: scanned,
          disableIdentityMap: true,
        })
      ).map((record) => record.id);
      scanned += ids.length;
      for (const group of await readGroups(em, table, ids)) {
        pacer.rest();
        const found = new Map(
          (
            await em.find(schema, { id: { $in: group } } as unknown as FilterQuery<T>, {
              disableIdentityMap: true,
            })
          ).map((record) => [record.id, record as T]),
        );
        for (const id of group) {
          const record = found.get(id);
          await pacer.pace();
          if (!record || !matches(record)) continue;
          if (total >= page.offset && items.length < page.limit) items.push(record);
          total++;
        }
      }
      const result = { items, total, limit: page.limit, offset: page.offset };
      if (ids.length < wanted) return result;
      if (scanned >= FILTER_SCAN_LIMIT) return { ...result, scanLimit: FILTER_SCAN_LIMIT };
    }
  });
}

/** The ids in order, in groups of at most `FILTER_READ_BYTES` stored bytes (at least one id each). */
async function readGroups(em: EntityManager, table: string, ids: string[]): Promise<string[][]> {
  const sizes = new Map(
    (
      await em.execute<{ id: string; bytes: number }[]>(
        `SELECT id, pg_column_size(t.*) AS bytes FROM "${table}" t WHERE id = ANY(?::uuid[])`,
        [uuidArray(ids)],
      )
    ).map((row) => [row.id, Number(row.bytes)]),
  );
  const groups: string[][] = [];
  let bytes = Infinity;
  for (const id of ids) {
    const size = sizes.get(id) ?? 0;
    if (bytes + size > FILTER_READ_BYTES) {
      groups.push([]);
      bytes = 0;
    }
    groups[groups.length - 1]!.push(id);
    bytes += size;
  }
  return groups;
}

/** The fields of a partial update that were given. */
export function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The systems each deployment (or environment) is linked to, in link order. */
export async function linkedSystemIds(
  em: EntityManager,
  kind: 'deployment' | 'environment',
  ids: string[],
): Promise<Map<string, string[]>> {
  const rows = await em.execute<{ id: string; system_id: string }[]>(
    `SELECT ${kind}_id AS id, system_id FROM system_${kind} WHERE ${kind}_id = ANY(?::uuid[]) ORDER BY created_at, system_id`,
    [uuidArray(ids)],
  );
  const map = new Map<string, string[]>(ids.map((id) => [id, []]));
  for (const row of rows) map.get(row.id)!.push(row.system_id);
  return map;
}
