import type { AuditEvent } from '../../db/entities';
import { celQuery, FilterCursorQuery, iso, pageOf, queryInteger } from './common';
import { z } from './zod';

export const AuditEventQuery = z.object({
  cel: celQuery('event'),
  after: z.uuid().optional().openapi({
    description: 'The id of the last event of the previous page: this page holds the events before it',
  }),
  limit: queryInteger(1, 1000).default(50).openapi({ default: 50 }),
  cursor: FilterCursorQuery,
});

export const AuditEventSchema = z
  .object({
    id: z.uuid(),
    at: z.string(),
    actor: z.object({ type: z.enum(['key', 'agent', 'system']), id: z.string(), name: z.string() }),
    action: z.string().openapi({ example: 'release.created' }),
    record: z.object({ type: z.string(), id: z.string() }),
    requestId: z.string().nullable(),
    changes: z
      .array(z.string())
      .openapi({ description: 'The names of the fields the write set (never values)' }),
    details: z
      .record(z.string(), z.unknown())
      .openapi({ description: 'Ids, statuses and reasons of the event' }),
    deploymentId: z.uuid().nullable(),
  })
  .openapi('AuditEvent');

export const AuditEventPageSchema = pageOf(AuditEventSchema, 'AuditEventPage', { boundedTotal: true });

export function toAuditEvent(event: AuditEvent): z.infer<typeof AuditEventSchema> {
  return {
    id: event.id,
    at: iso(new Date(event.createdAt)),
    actor: { type: event.actorType, id: event.actorId, name: event.actorName },
    action: event.action,
    record: { type: event.recordType, id: event.recordId },
    requestId: event.requestId ?? null,
    changes: event.changes,
    details: event.details,
    deploymentId: event.deploymentId ?? null,
  };
}
