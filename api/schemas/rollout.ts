import { ROLLOUT_TARGET_STATES, type RolloutView } from '../../application/rollouts';
import { displayText } from '../../domain/displayText';
import { ROLLOUT_STATES } from '../../domain/rollouts';
import { Timestamp } from './common';
import { z } from './zod';

export const RolloutParams = z.object({ workspaceId: z.uuid(), deploymentId: z.uuid(), versionId: z.uuid() });

export const RolloutControlBody = z
  .strictObject({
    reason: displayText(z.string().min(1).max(1000), 'multi').openapi({
      description: 'Why: shown in explain for every target of the rollout, and audited',
    }),
  })
  .openapi('RolloutControl');

export const RolloutJudgementBody = z
  .strictObject({
    decision: z.enum(['continue', 'rollback']).openapi({
      description:
        'continue: the waiting wave starts; rollback: the rollout is aborted and its targets rolled back',
    }),
    reason: displayText(z.string().min(1).max(1000), 'multi'),
  })
  .openapi('RolloutJudgement');

const RolloutWaveSchema = z
  .object({
    name: z.string().openapi({ description: 'The wave’s name; `rest` holds the targets no wave matches' }),
    maxParallel: z
      .number()
      .int()
      .openapi({ description: 'At most how many of its targets have an active job at once' }),
    bakeSeconds: z.number().int(),
    targets: z
      .object(Object.fromEntries(ROLLOUT_TARGET_STATES.map((state) => [state, z.number().int()])))
      .openapi({ description: 'Its targets by state' }),
  })
  .openapi('RolloutWave');

export const RolloutSchema = z
  .object({
    id: z.uuid(),
    policyId: z.uuid(),
    ruleId: z.uuid(),
    state: z.enum(ROLLOUT_STATES),
    currentWave: z.number().int().openapi({ description: 'Index in `waves` of the wave the rollout is at' }),
    reason: z.string().openapi({ description: 'Why its targets wait, or what happens next' }),
    bakeUntil: Timestamp.nullable(),
    halt: z.object({ reason: z.string(), at: Timestamp }).nullable(),
    awaitingJudgement: z
      .object({ wave: z.number().int(), since: Timestamp })
      .nullable()
      .openapi({ description: 'The wave waiting for a person’s judgement (POST .../rollout/judgement)' }),
    judgements: z.array(
      z.object({
        wave: z.number().int(),
        decision: z.enum(['continue', 'rollback']),
        reason: z.string(),
        by: z.object({ id: z.string(), name: z.string() }),
        at: Timestamp,
      }),
    ),
    waves: z.array(RolloutWaveSchema),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .openapi('Rollout');

export const RolloutListSchema = z
  .object({ rollouts: z.array(RolloutSchema).openapi({ description: 'One per waves rule that applies' }) })
  .openapi('RolloutList');

export const toRollouts = (rollouts: RolloutView[]) => ({ rollouts });
