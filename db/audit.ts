import type { EntityManager } from '@mikro-orm/postgresql';
import { SYSTEM_ACTOR, type AuditActor, type AuditEventInput } from '../domain/audit';
import { ForbiddenError } from '../domain/errors';
import type { SqlFragment } from './sql';
import { preparedStatement, runPrepared } from './preparedStatements';

/**
 * Who an operation acts as, for the audit events its writes record: a request's key or agent, or the
 * system (workflows, the reaper). A request's stores share one, filled in once its caller is known
 * (api/route.ts); the engine's functions are handed it by their callers. (Not an AsyncLocalStorage:
 * on Node 20 one in use slows every promise of the process, a fifth of the API's CPU per job.)
 */
export interface AuditOrigin {
  actor: AuditActor;
  requestId: string | null;
  /** The API write the request is, while its own event is still to be written (api/route.ts `audited`). */
  write?: PendingWriteEvent;
}

/** What a write's store knows of it before its commit. */
export interface WriteOutcome {
  /** The record it wrote, where the request's path does not name it. */
  id?: string;
  created?: boolean;
}

/**
 * An API write's own event, still to be written: by the store that commits the write, in the
 * write's transaction (`recordWriteEvent`), or else by the route once the handler answered.
 */
export interface PendingWriteEvent {
  describe(outcome: WriteOutcome): AuditEventInput | undefined;
  /** Whether a store wrote it with the write: the route then writes nothing. */
  recorded: boolean;
}

export const SYSTEM_ORIGIN: AuditOrigin = { actor: SYSTEM_ACTOR, requestId: null };

/** The columns an audit event is inserted with, in this order. */
export const AUDIT_EVENT_COLUMNS =
  'workspace_id, actor_type, actor_id, actor_name, request_id, action, record_type, record_id, changes, details, deployment_id';

/**
 * The insert of events as `origin`, as part of a statement (`recordAuditEvents` runs it alone). An
 * event about a release, a job or a version that names no deployment gets the record's own (an
 * approval's event shows on its deployment's timeline). The table's trigger adds each event's
 * webhook deliveries (Migration0033).
 */
export function auditEventsInsert(
  events: readonly AuditEventInput[],
  { actor, requestId }: AuditOrigin = SYSTEM_ORIGIN,
): SqlFragment {
  return {
    sql: auditEventsInsertSql(['?', '?', '?', '?'], jsonEvents('?')),
    params: [actor.type, actor.id, actor.name, requestId, JSON.stringify(events)],
  };
}

/** The columns of an event as `auditEventsInsertFrom`'s query yields them. */
const AUDIT_EVENT_ROW = 'workspace_id, action, record_type, record_id, changes, details, deployment_id';

/**
 * The insert of the events a query of the same statement yields, for a statement that decides
 * set-based which events there are (a claim, the reaper) and so stays one statement. The query
 * yields `AUDIT_EVENT_ROW` columns, in that order: as columns, not a jsonb object per event, which a
 * sweep of a thousand claims would build and take apart again (60 % of its time). `actor` is the SQL
 * of the actor's type, id and name and of the request id, in that order.
 */
export function auditEventsInsertFrom(
  eventsQuery: string,
  [type, id, name, request]: readonly [string, string, string, string],
): string {
  return `INSERT INTO audit_event (${AUDIT_EVENT_COLUMNS})
     SELECT ev.workspace_id, ${type}, ${id}, ${name}, ${request}, ev.action, ev.record_type, ev.record_id,
            ev.changes, ev.details, ev.deployment_id
       FROM (${eventsQuery}) AS ev(${AUDIT_EVENT_ROW})`;
}

/** Events given as one JSON array parameter, as rows of `e`. */
function jsonEvents(parameter: string): string {
  return `jsonb_array_elements(${parameter}::jsonb) AS e`;
}

/** The insert with this SQL for the actor's type, id and name and the request id, from the rows of `e` of `source`. */
function auditEventsInsertSql([type, id, name, request]: readonly string[], source: string): string {
  return `INSERT INTO audit_event (${AUDIT_EVENT_COLUMNS})
     SELECT (e->>'workspaceId')::uuid, ${type}, ${id}, ${name}, ${request}, e->>'action', e->'record'->>'type', e->'record'->>'id',
            coalesce(e->'changes', '[]'), coalesce(e->'details', '{}'),
            coalesce((e->>'deploymentId')::uuid, CASE e->'record'->>'type'
              WHEN 'release' THEN (SELECT deployment_id FROM release WHERE id = (e->'record'->>'id')::uuid)
              WHEN 'job' THEN (SELECT deployment_id FROM job WHERE id = (e->'record'->>'id')::uuid)
              WHEN 'version' THEN (SELECT deployment_id FROM deployment_version WHERE id = (e->'record'->>'id')::uuid)
            END)
       FROM ${source}`;
}

/** The insert alone, every write's own event among them: prepared (db/preparedStatements.ts). */
const INSERT_AUDIT_EVENTS = preparedStatement(
  'insert_audit_events',
  auditEventsInsertSql(['$1::text', '$2::text', '$3::text', '$4::text'], jsonEvents('$5')),
);

/** Events written in one statement, as `origin`, with the writes they describe (call it in their transaction). */
export async function recordAuditEvents(
  em: EntityManager,
  events: readonly AuditEventInput[],
  origin: AuditOrigin = SYSTEM_ORIGIN,
): Promise<void> {
  if (events.length === 0) return;
  const { actor, requestId } = origin;
  await runPrepared(em, INSERT_AUDIT_EVENTS, [
    actor.type,
    actor.id,
    actor.name,
    requestId,
    JSON.stringify(events),
  ]);
}

/**
 * The request's own write event, written with the write it describes (call it in the write's
 * transaction, once the write is known to stand): a crash after the commit cannot lose it, and it
 * costs no statement or commit of its own. Written again if the transaction is retried; a rolled-back
 * one leaves none, and the failed request's route writes none either.
 */
export async function recordWriteEvent(
  em: EntityManager,
  origin: AuditOrigin,
  outcome: WriteOutcome = {},
): Promise<void> {
  const event = origin.write?.describe(outcome);
  if (!event) return;
  await recordAuditEvents(em, [event], origin);
  origin.write!.recorded = true;
}

/**
 * Refuses a key that made the version what it ships (requireDistinctApprover, 403 with `reason`),
 * the attempt recorded as an event of its own: written in a transaction apart from the refused
 * request's, which rolls back, so the refusal stays on the trail.
 */
export async function refuseVersionAuthor(
  em: EntityManager,
  origin: AuditOrigin,
  reason: string,
  event: AuditEventInput,
): Promise<never> {
  const refused = { ...event, details: { ...event.details, reason } };
  await (em.fork() as EntityManager).transactional((tx) => recordAuditEvents(tx, [refused], origin));
  throw new ForbiddenError(reason, 'distinct_approver_required');
}

/**
 * Deletes the events (and the webhook deliveries) older than the retention, a batch per
 * statement: ids are time-ordered, so the boundary is an id and the primary key finds the rows.
 */
export async function purgeExpiredAuditEvents(em: EntityManager, retentionDays: number): Promise<number> {
  let purged = 0;
  for (const table of ['audit_event', 'webhook_delivery']) {
    for (;;) {
      const [row] = await em.execute<{ n: number }[]>(
        `WITH boundary AS (
           SELECT (lpad(to_hex((extract(epoch FROM now() - make_interval(days => ?)) * 1000)::bigint), 12, '0')
                   || '00000000000000000000')::uuid AS id
         ), gone AS (
           DELETE FROM ${table} WHERE id IN (
             SELECT id FROM ${table} WHERE id < (SELECT id FROM boundary) ORDER BY id LIMIT ${PURGE_BATCH})
           RETURNING 1)
         SELECT count(*)::int AS n FROM gone`,
        [retentionDays],
      );
      purged += row?.n ?? 0;
      if ((row?.n ?? 0) < PURGE_BATCH) break;
    }
  }
  return purged;
}

const PURGE_BATCH = 10_000;
