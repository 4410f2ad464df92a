import { isUuid } from '../domain/uuid';

/**
 * A uuid[] parameter. Knex expands an array binding into a list of parameters, so arrays travel as
 * one Postgres array literal (`{a,b}`) cast with `?::uuid[]`; uuids need no quoting inside it.
 */
export function uuidArray(ids: readonly string[]): string {
  for (const id of ids) if (!isUuid(id)) throw new Error(`not a uuid: ${id}`);
  return `{${ids.join(',')}}`;
}
