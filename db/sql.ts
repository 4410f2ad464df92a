import { ACTIVE_JOB_STATUSES, JOB_STATUSES, type JobStatus } from '../domain/jobStatus';
import type { ReleaseTargetRef } from '../domain/releaseTargets';
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
 * Release targets as one JSON parameter, read back as rows by `targetRowsSql`. A set rather than
 * uuid arrays: the planner sizes an array by its values, so a prepared statement given one target's
 * arrays never judged a generic plan good enough and was planned on every call; a JSON set is sized
 * alike whatever it holds, and one plan serves them all.
 */
export function targetRows(targets: readonly ReleaseTargetRef[]): string {
  return JSON.stringify(
    targets.map((t) => ({
      resource_id: t.resourceId,
      environment_id: t.environmentId,
      deployment_id: t.deploymentId,
    })),
  );
}

/** The rows of a `targetRows` parameter (`$n`), as `alias(resource_id, environment_id, deployment_id)`. */
export function targetRowsSql(parameter: string, alias: string): string {
  return `jsonb_to_recordset(${parameter}::jsonb) AS ${alias}(resource_id uuid, environment_id uuid, deployment_id uuid)`;
}

/**
 * Job statuses as SQL literals (`'a', 'b'`), for statements that take their status lists from a
 * table of domain/ (the claim lifecycle's); each is checked against the closed set of statuses.
 */
export function jobStatusListSql(statuses: readonly JobStatus[]): string {
  for (const status of statuses)
    if (!(JOB_STATUSES as readonly string[]).includes(status)) throw new Error(`not a job status: ${status}`);
  return statuses.map((status) => `'${status}'`).join(', ');
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
