import { defineEntity, type InferEntity } from '@mikro-orm/core';
import type { AuditActorType } from '../../domain/audit';

const p = defineEntity.properties;

/**
 * One audit event (domain/audit.ts). Written by SQL only (db/audit.ts): its id comes from the
 * database (UUID version 7) and `createdAt` is that id's millisecond.
 */
export const AuditEventSchema = defineEntity({
  name: 'AuditEvent',
  tableName: 'audit_event',
  properties: {
    id: p.uuid().primary(),
    workspaceId: p.uuid(),
    createdAt: p.datetime(),
    actorType: p.text().$type<AuditActorType>(),
    actorId: p.text(),
    actorName: p.text(),
    action: p.text(),
    recordType: p.text(),
    recordId: p.text(),
    requestId: p.text().nullable(),
    changes: p.json<string[]>(),
    details: p.json<Record<string, unknown>>(),
    deploymentId: p.uuid().nullable(),
  },
});
export type AuditEvent = InferEntity<typeof AuditEventSchema>;
