import type { EntitySchema, FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError } from '../../domain/errors';
import type { Page, PageRequest } from '../../domain/pagination';
import type { CelQuery, RecordScope } from '../../domain/selectors';
import { recordOf, type RowShape, type StoredRow } from '../../engine/selectors/celRows';
import { celThreads } from '../../engine/selectors/celThreads';
import { paced } from '../../engine/selectors/pace';
import { uuidArray } from '../sql';
import { scalarColumns, type ScalarColumn } from '../plainRecords';

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
 * Stored bytes (as PostgreSQL keeps them, often compressed) read and judged at a time: what a scan
 * holds in memory and sends to a CEL thread at once (a record of the largest size alone).
 */
export const FILTER_READ_BYTES = 64 * 1024;

/**
 * A page of the records matching a CEL filter given with a request. CEL runs in the application, so
 * the filter goes through the records in order — their ids `FILTER_BATCH` at a time, the records
 * themselves a few hundred kilobytes at a time — and counts the matches, up to `FILTER_SCAN_LIMIT`
 * records: past that the page says `scanLimit` and its total counts the matches among the records read.
 *
 * The rows are read with their JSON as text and judged on the process's CEL threads
 * (engine/selectors/celThreads.ts): parsing a large record and evaluating it never run on the event
 * loop, only the page's own matches are parsed here (in paced slices, engine/selectors/pace.ts), and
 * nothing else is kept in memory. A filter past its budget ends the scan (OverBudgetError, 422).
 *
 * Batches are read by offset, not by key: `created_at` holds microseconds that the entity's `Date`
 * does not, so a key taken from the last record read could skip or repeat records.
 */
export async function listFiltered<T extends { id: string }>(
  em: EntityManager,
  workspaceId: string,
  schema: EntitySchema<T, never>,
  where: FilterQuery<T>,
  page: PageRequest,
  filter: CelQuery<RecordScope> | undefined,
  order: 'asc' | 'desc' = 'asc',
): Promise<Page<T>> {
  if (!filter) return listPage(em, schema, where, page, order);
  const scan = scannedRecords(em, schema);
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
      for (const group of await readGroups(em, scan.table, scan.columns, ids)) {
        const byId = new Map((await pacer.read(() => scan.read(group))).map((row) => [row.id, row]));
        const rows = group.flatMap((id) => byId.get(id) ?? []);
        const matched = await celThreads().matchRows(workspaceId, filter, rows, scan.shape);
        for (const [index, row] of rows.entries()) {
          if (!matched[index]) continue;
          if (total >= page.offset && items.length < page.limit) {
            await pacer.pace();
            items.push(recordOf<T>(row, scan.shape));
          }
          total++;
        }
      }
      const result = { items, total, limit: page.limit, offset: page.offset };
      if (ids.length < wanted) return result;
      if (scanned >= FILTER_SCAN_LIMIT) return { ...result, scanLimit: FILTER_SCAN_LIMIT };
    }
  });
}

/**
 * Rows as a filter reads them: the record's fields under their property names, JSON values as text,
 * timestamps as epoch milliseconds (`shape` says which), turned into records off the event loop or
 * within the scan's slices. Left to the driver and the ORM, parsing would run as the rows arrive,
 * outside any slice, and the ORM would serialize each value again for its change tracking. The
 * records are plain objects of the entity's shape (its properties are all scalar), kept out of the
 * identity map.
 */
function scannedRecords<T extends { id: string }>(em: EntityManager, schema: EntitySchema<T, never>) {
  const { table, columns } = scalarColumns(em, schema);
  const named = (pick: (column: ScalarColumn) => boolean) =>
    columns.filter(pick).map((column) => column.property);
  const shape: RowShape = { json: named((column) => column.json), dates: named((column) => column.date) };
  const select = columns
    .map(({ property, column, json, date }) => {
      if (json) return `"${column}"::text AS "${property}"`;
      if (date) return `(extract(epoch FROM "${column}") * 1000)::float8 AS "${property}"`;
      return `"${column}" AS "${property}"`;
    })
    .join(', ');
  return {
    table,
    columns: columns.map((column) => column.column),
    shape,
    read: (ids: string[]) =>
      em.execute<StoredRow[]>(`SELECT ${select} FROM "${table}" WHERE id = ANY(?::uuid[])`, [uuidArray(ids)]),
  };
}

/** The ids in order, in groups of at most `FILTER_READ_BYTES` stored bytes (at least one id each). */
async function readGroups(
  em: EntityManager,
  table: string,
  columns: string[],
  ids: string[],
): Promise<string[][]> {
  // Column by column: a whole row's size (`pg_column_size(t.*)`) would decompress every value to build it.
  const size = columns.map((column) => `coalesce(pg_column_size("${column}"), 0)`).join(' + ');
  const sizes = new Map(
    (
      await em.execute<{ id: string; bytes: number }[]>(
        `SELECT id, ${size} AS bytes FROM "${table}" WHERE id = ANY(?::uuid[])`,
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
