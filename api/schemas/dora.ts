import { DEFAULT_DORA_WINDOW_DAYS, MAX_DORA_WINDOW_DAYS } from '../../domain/dora';
import { Timestamp } from './common';
import { z } from './zod';

export const DoraQuery = z.strictObject({
  window: z
    .string()
    .regex(/^[1-9][0-9]{0,2}d$/, 'a number of days, such as 30d')
    .default(`${DEFAULT_DORA_WINDOW_DAYS}d`)
    .transform((text) => Number(text.slice(0, -1)))
    .refine((days) => days <= MAX_DORA_WINDOW_DAYS, `at most ${MAX_DORA_WINDOW_DAYS}d`)
    .openapi({
      type: 'string',
      example: '30d',
      description: `Days ending now (1d–${MAX_DORA_WINDOW_DAYS}d)`,
    }),
});

const Percentiles = z.object({ p50: z.number().nullable(), p90: z.number().nullable() });

const DoraFiguresSchema = z.object({
  deployments: z.number().int().openapi({ description: 'Releases that succeeded in the window' }),
  deploymentsPerDay: z.number(),
  leadTimeSeconds: Percentiles.openapi({
    description: "From a version's creation to its release succeeding",
  }),
  failed: z.number().int(),
  changeFailureRate: z.number().nullable().openapi({ description: 'Failed of the releases that ended' }),
  timeToRestoreSeconds: Percentiles.openapi({
    description: "From a failure on a target to that target's next success",
  }),
  unrestored: z.number().int().openapi({ description: 'Failures with no success on their target since' }),
});

export const DoraReportSchema = z
  .object({
    deploymentId: z.uuid(),
    window: z.object({ days: z.number().int(), from: Timestamp, to: Timestamp }),
    overall: DoraFiguresSchema,
    daily: z
      .array(z.object({ day: z.string(), succeeded: z.number().int(), failed: z.number().int() }))
      .openapi({ description: 'Releases that ended, by UTC day (YYYY-MM-DD; days without any left out)' }),
    environments: z.array(DoraFiguresSchema.extend({ environmentId: z.uuid(), environmentName: z.string() })),
  })
  .openapi('DoraReport');
