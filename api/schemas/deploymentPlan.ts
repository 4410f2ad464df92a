import type { DeploymentPlan } from '../../application/deploymentPlans';
import { displayText } from '../../domain/displayText';
import { JsonObjectSchema, MetadataSchema, Timestamp } from './common';
import { z } from './zod';

const PlanResultSchema = z
  .object({
    id: z.string(),
    status: z.enum(['completed', 'errored']),
    hasChanges: z.boolean(),
    contentHash: z.string().openapi({ description: 'SHA-256 of `proposed`' }),
    current: z
      .string()
      .openapi({ description: "What the current release's job was given (empty when none)" }),
    proposed: z.string().openapi({ description: 'What the proposed version’s job would be given' }),
    message: z.string(),
  })
  .openapi('DeploymentPlanTargetResult');

export const DeploymentPlanSchema = z
  .object({
    id: z.uuid(),
    deploymentId: z.uuid(),
    status: z.enum(['completed']),
    version: z.object({ tag: z.string(), name: z.string(), metadata: MetadataSchema }),
    metadata: MetadataSchema,
    summary: z.object({
      total: z.number().int(),
      changed: z.number().int(),
      unchanged: z.number().int(),
      errored: z.number().int(),
      unsupported: z.number().int(),
    }),
    targets: z.array(
      z.object({
        environmentId: z.uuid(),
        environmentName: z.string(),
        resourceId: z.uuid(),
        resourceName: z.string(),
        hasChanges: z.boolean(),
        results: z.array(PlanResultSchema),
      }),
    ),
    createdAt: Timestamp,
  })
  .openapi('DeploymentPlan');

export const CreatePlanBody = z
  .object({
    version: z.object({
      tag: displayText(z.string().trim().min(1).max(255), 'single'),
      name: displayText(z.string().max(255), 'single').optional(),
      config: JsonObjectSchema.optional(),
      jobAgentConfig: JsonObjectSchema.optional(),
      metadata: MetadataSchema.optional(),
    }),
    metadata: MetadataSchema.default({}),
  })
  .openapi('CreateDeploymentPlan');

export const DeploymentPlanParams = z.object({
  workspaceId: z.uuid(),
  deploymentId: z.uuid(),
  planId: z.uuid(),
});

export const toDeploymentPlan = (plan: DeploymentPlan): z.infer<typeof DeploymentPlanSchema> => plan;
