import type { Hold } from '../../db/entities';
import { celExpression } from '../../domain/celSchema';
import { displayText } from '../../domain/displayText';
import { MAX_RULE_SECONDS } from '../../domain/ruleLimits';
import { windowProblems } from '../../domain/windows';
import { ifPresent, iso, pageOf, pageQuery, Timestamp, WorkspaceParams } from './common';
import { z } from './zod';

const HoldScheduleSchema = z
  .strictObject({
    rrule: z.string().min(1).max(1000).openapi({
      description:
        'RFC 5545 rule of the windows’ starts, HOURLY or coarser (DTSTART in the time zone’s wall clock)',
      example: 'FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=24',
    }),
    durationSeconds: z
      .number()
      .int()
      .min(1)
      .max(MAX_RULE_SECONDS)
      .openapi({ description: 'Each window’s length' }),
    timeZone: z.string().max(100).default('UTC').openapi({ description: 'IANA time zone of the rule' }),
  })
  .superRefine((schedule, ctx) => {
    for (const { path, message } of windowProblems(
      schedule.rrule,
      schedule.timeZone,
      {
        rrule: 'rrule',
        timeZone: 'timeZone',
      },
      new Date(),
    ))
      ctx.addIssue({ code: 'custom', path: [path], message });
  })
  .openapi('HoldSchedule');

export const HoldBody = z
  .strictObject({
    selector: celExpression('target').openapi({
      description: 'CEL over `deployment`, `environment` and `resource`: the release targets held',
      example: 'environment.name == "production"',
    }),
    effect: z.enum(['block', 'pin']).openapi({
      description:
        'block: no new job starts and queued jobs are kept from agents; pin: the targets stay on `versionId`',
    }),
    versionId: z.uuid().optional().openapi({ description: 'The version a pin keeps (a pin only)' }),
    reason: displayText(z.string().trim().min(1).max(2000), 'multi'),
    expiresAt: Timestamp.optional().openapi({
      description: 'When the hold ends by itself; until deleted when absent',
    }),
    schedule: HoldScheduleSchema.optional().openapi({
      description: 'A block in force only inside these windows: a freeze',
    }),
  })
  .openapi('HoldInput');

export const HoldSchema = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    selector: z.string(),
    effect: z.enum(['block', 'pin']),
    versionId: z.uuid().optional(),
    reason: z.string(),
    expiresAt: Timestamp.optional(),
    schedule: HoldScheduleSchema.optional(),
    active: z.boolean().openapi({ description: 'Not expired yet (a freeze may still be between windows)' }),
    createdBy: z
      .object({ id: z.string(), name: z.string() })
      .openapi({ description: 'The API key that created it' }),
    createdAt: Timestamp,
  })
  .openapi('Hold');

export const HoldPageSchema = pageOf(HoldSchema, 'HoldPage');

export const HoldListQuery = pageQuery().extend({
  effect: z.enum(['block', 'pin']).optional(),
  active: z
    .enum(['true', 'false'])
    .transform((value) => value === 'true')
    .optional()
    .openapi({ type: 'boolean', description: 'Only unexpired (true) or expired (false) holds' }),
});

export const HoldParams = WorkspaceParams.extend({ holdId: z.uuid() });

export function toHold(hold: Hold, now = new Date()): z.infer<typeof HoldSchema> {
  return {
    id: hold.id,
    workspaceId: hold.workspaceId,
    selector: hold.selector,
    effect: hold.effect,
    ...ifPresent('versionId', hold.versionId),
    reason: hold.reason,
    ...(hold.expiresAt ? { expiresAt: iso(hold.expiresAt) } : {}),
    ...ifPresent('schedule', hold.schedule),
    active: !hold.expiresAt || hold.expiresAt.getTime() > now.getTime(),
    createdBy: { id: hold.createdById, name: hold.createdByName },
    createdAt: iso(hold.createdAt),
  };
}
