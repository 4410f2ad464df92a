const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A uuid[] parameter. Knex expands an array binding into a list of parameters, so arrays travel as
 * one Postgres array literal (`{a,b}`) cast with `?::uuid[]`; uuids need no quoting inside it.
 */
export function uuidArray(ids: readonly string[]): string {
  for (const id of ids) if (!UUID.test(id)) throw new Error(`not a uuid: ${id}`);
  return `{${ids.join(',')}}`;
}
