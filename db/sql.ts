import { ACTIVE_JOB_STATUSES } from '../domain/jobStatus';
import { isUuid } from '../domain/uuid';

/**
 * A uuid[] parameter. Knex expands an array binding into a list of parameters, so arrays travel as
 * one Postgres array literal (`{a,b}`) cast with `?::uuid[]`; uuids need no quoting inside it.
 */
export function uuidArray(ids: readonly string[]): string {
  for (const id of ids) if (!isUuid(id)) throw new Error(`not a uuid: ${id}`);
  return `{${ids.join(',')}}`;
}

/**
 * The statuses of jobs that have not ended, as a SQL list: spelled as the partial index of active
 * jobs (`job_one_active_per_entry`) spells them, so a query that filters with it can use that index.
 */
export const ACTIVE_JOB_STATUS_LIST = `(${ACTIVE_JOB_STATUSES.map((status) => `'${status}'`).join(', ')})`;

/**
 * Part of a statement with its `?` parameters in order, for writes that several statements share
 * (an audit event's insert, an outbox row's) and that one statement may combine with its own.
 */
export interface SqlFragment {
  sql: string;
  params: unknown[];
}
