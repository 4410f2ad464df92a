import { raw, type EntitySchema, type FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError, ValidationError } from '../domain/errors';
import {
  decodeFilterCursor,
  encodeFilterCursor,
  filterBinding,
  type FilterCursor,
  type RecordKey,
} from '../domain/filterCursor';
import type { BoundedPage, FilterPageRequest, Page, PageRequest } from '../domain/pagination';
import type { CelQuery, RecordScope } from '../domain/selectors';
import {
  recordOf,
  type RowShape,
  type StoredRow,
  celPredicate,
  celThreads,
  paced,
  type Pacer,
} from '../engine/selectors';
import { uuidArray, type SqlFragment } from '../db/sql';
import { scalarColumns, type ScalarColumn } from '../db/plainRecords';

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

/** Records a CEL-filtered list judges with CEL for one request, at most. */
export const FILTER_SCAN_LIMIT = 10_000;
/** Records a CEL-filtered list orders at a time (ids only). */
export const FILTER_BATCH = 500;
/**
 * Stored bytes (as PostgreSQL keeps them, often compressed) read and judged at a time: what a scan
 * holds in memory and sends to a CEL thread at once (a record of the largest size alone).
 */
export const FILTER_READ_BYTES = 64 * 1024;

/**
 * A page of the records matching a CEL filter given with a request.
 *
 * A filter of the shapes engine/selectors/celSql.ts translates runs in PostgreSQL, on the tables'
 * indexes: the page and an exact `total` however many records the list holds.
 *
 * Any other filter is judged by CEL here, the records read in order — their ids `FILTER_BATCH` at a
 * time, the records themselves a few hundred kilobytes at a time — up to `FILTER_SCAN_LIMIT` records
 * per request. A reading that stops before the end of the list says so: `totalIsExact: false`,
 * `totalAtLeast` (the matches found so far: never answered as `total`, docs/api.md "Lists"), `scanLimit`, and a `nextCursor` from which the next
 * request reads on, so following cursors reaches every match. The rows are read with their JSON as
 * text and judged on the process's CEL threads (engine/selectors/celThreads.ts): parsing a large
 * record and evaluating it never run on the event loop, only the page's own matches are parsed here
 * (in paced slices, engine/selectors/pace.ts), and nothing else is kept in memory. A filter past its
 * budget ends the scan (OverBudgetError, 422).
 *
 * Either way, a page after which matches may follow answers a `nextCursor` (domain/filterCursor.ts).
 * It holds the place of the last record read, `created_at` to the microsecond (which the entity's
 * `Date` does not hold) and id, and the next request reads on from it by key: records created or
 * deleted meanwhile never shift it.
 */
export async function listFiltered<T extends { id: string }>(
  em: EntityManager,
  workspaceId: string,
  schema: EntitySchema<T, never>,
  where: FilterQuery<T>,
  page: FilterPageRequest,
  filter: CelQuery<RecordScope> | undefined,
  order: 'asc' | 'desc' = 'asc',
): Promise<BoundedPage<T>> {
  if (!filter) {
    if (page.cursor !== undefined) {
      throw new ValidationError('A cursor continues a list given a `cel` filter: give it with that filter', [
        { path: 'query.cursor', message: 'only with cel' },
      ]);
    }
    return listPage(em, schema, where, page, order);
  }
  const records = scannedRecords(em, schema);
  const binding = filterBinding([workspaceId, records.table, where, order, filter.scope, filter.expression]);
  const list: FilteredList<T> = { em, schema, where, order, binding, ...records };
  const start = startOf(page, binding);
  const predicate = celPredicate(filter.scope, filter.ast);
  return paced(workspaceId, (pacer) =>
    predicate
      ? translatedPage(list, pacer, page.limit, start, predicate)
      : scannedPage(list, pacer, workspaceId, filter, page.limit, start),
  );
}

/** A filtered list: its records' table and conditions, their order, and how a scan reads them. */
interface FilteredList<T extends { id: string }> extends ScannedRecords {
  em: EntityManager;
  schema: EntitySchema<T, never>;
  where: FilterQuery<T>;
  order: 'asc' | 'desc';
  /** What binds its cursors to it (domain/filterCursor.ts). */
  binding: string;
}

/** Where a page begins: after a record (from a cursor) or at the start, past `skip` matches. */
interface PageStart {
  after?: RecordKey;
  /** The matches before `after`: with `skip`, the page's offset. */
  matches: number;
  skip: number;
}

function startOf(page: FilterPageRequest, binding: string): PageStart {
  if (page.cursor === undefined) return { matches: 0, skip: page.offset };
  if (page.offset > 0) {
    throw new ValidationError('Give either offset or cursor: a cursor holds the place it continues from', [
      { path: 'query.offset', message: 'not with cursor' },
    ]);
  }
  return decodeFilterCursor(page.cursor, binding);
}

/** A translated filter's page: its keys and exact total from SQL, then the page's records. */
async function translatedPage<T extends { id: string }>(
  list: FilteredList<T>,
  pacer: Pacer,
  limit: number,
  start: PageStart,
  predicate: SqlFragment,
): Promise<Page<T>> {
  const total = await list.em
    .createQueryBuilder(list.schema)
    .where(list.where)
    .andWhere(`(${predicate.sql})`, predicate.params)
    .getCount();
  const keys = await orderedKeys(list, { predicate, after: start.after, skip: start.skip, limit });
  const items = await readRecords(
    list,
    pacer,
    keys.map((key) => key.id),
  );
  const offset = start.matches + start.skip;
  const last = keys.at(-1);
  const matches = offset + keys.length;
  return {
    items,
    total,
    limit,
    offset,
    totalIsExact: true,
    ...(last && matches < total
      ? { nextCursor: encodeFilterCursor({ after: last, matches, skip: 0 }, list.binding) }
      : {}),
  };
}

/** A filter judged by CEL: up to `FILTER_SCAN_LIMIT` records read from the page's start. */
async function scannedPage<T extends { id: string }>(
  list: FilteredList<T>,
  pacer: Pacer,
  workspaceId: string,
  filter: CelQuery<RecordScope>,
  limit: number,
  start: PageStart,
): Promise<BoundedPage<T>> {
  const items: T[] = [];
  /** The matches read, those skipped included. */
  let matched = 0;
  let scanned = 0;
  let after = start.after;
  let lastItem: RecordKey | undefined;
  let reachedEnd = false;
  while (!reachedEnd && scanned < FILTER_SCAN_LIMIT) {
    const wanted = Math.min(FILTER_BATCH, FILTER_SCAN_LIMIT - scanned);
    pacer.rest();
    const keys = await orderedKeys(list, { after, limit: wanted });
    scanned += keys.length;
    reachedEnd = keys.length < wanted;
    after = keys.at(-1) ?? after;
    const keyOf = new Map(keys.map((key) => [key.id, key]));
    for (const group of await readGroups(list.em, list.table, list.columns, [...keyOf.keys()])) {
      const byId = new Map((await pacer.read(() => list.read(group))).map((row) => [row.id, row]));
      const rows = group.flatMap((id) => byId.get(id) ?? []);
      const verdicts = await celThreads().matchRows(workspaceId, filter, rows, list.shape);
      for (const [index, row] of rows.entries()) {
        if (!verdicts[index]) continue;
        if (matched >= start.skip && items.length < limit) {
          await pacer.pace();
          items.push(recordOf<T>(row, list.shape));
          lastItem = keyOf.get(row.id);
        }
        matched++;
      }
    }
  }
  const offset = start.matches + start.skip;
  const total = start.matches + matched;
  // After a full page whose reading found more matches, the next page starts after its last item;
  // otherwise after the last record read, when the reading stopped before the end of the list.
  const next: FilterCursor | undefined =
    lastItem && items.length === limit && matched > start.skip + limit
      ? { after: lastItem, matches: offset + limit, skip: 0 }
      : !reachedEnd && after
        ? { after, matches: total, skip: Math.max(0, start.skip - matched) }
        : undefined;
  return {
    items,
    ...(reachedEnd ? { total } : { totalAtLeast: total, scanLimit: FILTER_SCAN_LIMIT }),
    limit,
    offset,
    totalIsExact: reachedEnd,
    ...(next ? { nextCursor: encodeFilterCursor(next, list.binding) } : {}),
  };
}

/** A record's `created_at` to the microsecond, as digits: the first half of its key. */
const CREATED_MICROS = `(extract(epoch FROM created_at) * 1000000)::bigint::text`;

/** The keys of the list's records in order (matching `predicate` if given): after `after`, past `skip`. */
async function orderedKeys<T extends { id: string }>(
  list: FilteredList<T>,
  range: { predicate?: SqlFragment; after?: RecordKey; skip?: number; limit: number },
): Promise<RecordKey[]> {
  const query = list.em
    .createQueryBuilder(list.schema)
    .select(['id', raw(`${CREATED_MICROS} AS at`)] as never)
    .where(list.where);
  if (range.predicate) query.andWhere(`(${range.predicate.sql})`, range.predicate.params);
  if (range.after) {
    query.andWhere(
      `(created_at, id) ${list.order === 'asc' ? '>' : '<'} ('epoch'::timestamptz + ?::bigint * interval '1 microsecond', ?::uuid)`,
      [range.after.at, range.after.id],
    );
  }
  return query
    .orderBy({ createdAt: list.order, id: list.order } as never)
    .limit(range.limit)
    .offset(range.skip ?? 0)
    .execute<RecordKey[]>('all', false);
}

/** The records of these ids in order (those deleted meanwhile left out), parsed in paced slices. */
async function readRecords<T extends { id: string }>(
  list: FilteredList<T>,
  pacer: Pacer,
  ids: string[],
): Promise<T[]> {
  const records: T[] = [];
  for (const group of await readGroups(list.em, list.table, list.columns, ids)) {
    const byId = new Map((await pacer.read(() => list.read(group))).map((row) => [row.id, row]));
    for (const row of group.flatMap((id) => byId.get(id) ?? [])) {
      await pacer.pace();
      records.push(recordOf<T>(row, list.shape));
    }
  }
  return records;
}

/**
 * Rows as a filter reads them: the record's fields under their property names, JSON values as text,
 * timestamps as epoch milliseconds (`shape` says which), turned into records off the event loop or
 * within the scan's slices. Left to the driver and the ORM, parsing would run as the rows arrive,
 * outside any slice, and the ORM would serialize each value again for its change tracking. The
 * records are plain objects of the entity's shape (its properties are all scalar), kept out of the
 * identity map.
 */
interface ScannedRecords {
  table: string;
  /** The columns read, in the order of the record's properties. */
  columns: string[];
  shape: RowShape;
  read(ids: string[]): Promise<StoredRow[]>;
}

function scannedRecords<T extends { id: string }>(
  em: EntityManager,
  schema: EntitySchema<T, never>,
): ScannedRecords {
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
