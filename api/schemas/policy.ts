import type { Policy } from '../../db/entities';
import { redactProbeHeaders } from '../../db/sensitiveValues';
import { celExpression } from '../../domain/celSchema';
import { PolicyRuleInput } from '../../domain/policies';
import {
  Description,
  ifPresent,
  iso,
  MetadataSchema,
  Name,
  SelectorWarningsSchema,
  Timestamp,
} from './common';
import { z } from './zod';

const Rule = PolicyRuleInput.openapi('PolicyRule', {
  description:
    'Exactly one of anyApproval, environmentProgression, deploymentWindow, versionSelector, versionCooldown, ' +
    'retry, gradualRollout, verification',
});

export const PolicySchema = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    name: z.string(),
    description: z.string().optional(),
    selector: z.string(),
    priority: z.number().int(),
    enabled: z.boolean(),
    metadata: MetadataSchema,
    rules: z.array(
      z
        .object({
          id: z.uuid(),
          policyId: z.uuid(),
          createdAt: Timestamp.openapi({ description: 'When a rule with this id was first written' }),
        })
        .catchall(z.unknown()),
    ),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    selectorWarnings: SelectorWarningsSchema.optional(),
  })
  .openapi('Policy');

export const PolicyBody = z
  .object({
    name: Name,
    description: Description,
    selector: celExpression('target').optional().openapi({
      description:
        'CEL over `resource`, `deployment` and `environment`: the release targets it governs (default "true")',
    }),
    priority: z.number().int().min(-1000).max(1000).optional(),
    enabled: z.boolean().optional(),
    metadata: MetadataSchema.optional(),
    rules: z.array(Rule).max(50).optional(),
  })
  .openapi('PolicyInput');

export const PolicyParams = z.object({ workspaceId: z.uuid(), policyId: z.uuid() });

export function toPolicy(policy: Policy): z.infer<typeof PolicySchema> {
  return {
    id: policy.id,
    workspaceId: policy.workspaceId,
    name: policy.name,
    ...ifPresent('description', policy.description),
    selector: policy.selector,
    priority: policy.priority,
    enabled: policy.enabled,
    metadata: policy.metadata,
    rules: redactProbeHeaders(policy.rules).map(({ id, createdAt, ...rule }) => ({
      id,
      policyId: policy.id,
      createdAt: createdAt ?? iso(policy.createdAt),
      ...rule,
    })),
    createdAt: iso(policy.createdAt),
    updatedAt: iso(policy.updatedAt),
  };
}

const HeldTargetSchema = z.object({
  releaseTargetKey: z.string(),
  resource: z.object({ name: z.string(), identifier: z.string() }),
  environment: z.object({ id: z.uuid(), name: z.string() }),
  deployment: z.object({ id: z.uuid(), slug: z.string() }),
  version: z.object({ id: z.uuid(), tag: z.string() }),
  state: z.enum(['waiting', 'blocked']),
  reason: z.string(),
  nextEvaluationAt: z.string().optional(),
});

export const PolicyDryRunSchema = z
  .object({
    matchedTargets: z.number().int(),
    evaluatedTargets: z.number().int(),
    rules: z.array(
      z.object({
        index: z.number().int(),
        kind: z.string(),
        note: z.string().optional(),
        counts: z.object({ passed: z.number().int(), waiting: z.number().int(), blocked: z.number().int() }),
        held: z.array(HeldTargetSchema),
      }),
    ),
  })
  .openapi('PolicyDryRun', {
    description:
      'What a policy would hold now, rule by rule, on a would-be release of each matching target’s newest ready version; nothing is saved',
  });
