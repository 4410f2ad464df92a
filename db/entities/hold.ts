import { defineEntity, type InferEntity } from '@mikro-orm/core';
import type { HoldEffect, HoldSchedule } from '../../domain/holds';
import { createdAt, workspaceScoped } from './common';

/** A block or pin over the release targets its selector matches (domain/holds.ts). */
export const HoldSchema = defineEntity({
  name: 'Hold',
  tableName: 'hold',
  properties: (p) => ({
    ...workspaceScoped(),
    selector: p.text(),
    effect: p.text().$type<HoldEffect>(),
    versionId: p.uuid().nullable(),
    reason: p.text(),
    expiresAt: p.datetime().nullable(),
    schedule: p.json<HoldSchedule>().nullable(),
    createdById: p.text(),
    createdByName: p.text(),
    ...createdAt(),
  }),
});
export type Hold = InferEntity<typeof HoldSchema>;
