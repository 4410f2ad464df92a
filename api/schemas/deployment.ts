import type { Deployment } from '../../db/entities';
import { redactConfig } from '../../db/sensitiveValues';
import { celExpression } from '../../domain/celSchema';
import {
  Description,
  ifPresent,
  iso,
  JsonObjectSchema,
  MetadataSchema,
  Name,
  SelectorWarningsSchema,
  Slug,
  Timestamp,
} from './common';
import { z } from './zod';

export const JobAgentEntrySchema = z
  .object({
    ref: z.string().min(1).max(200).openapi({ description: 'The job agent: its id or name' }),
    config: JsonObjectSchema.default({}).openapi({
      description: 'Agent-specific configuration for this deployment',
    }),
    selector: celExpression('resource').optional().openapi({
      description: 'CEL over `resource`: which resources this agent serves, when there are several',
    }),
  })
  .openapi('JobAgentEntry');

export const DeploymentSchema = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    name: z.string(),
    slug: z.string(),
    description: z.string().optional(),
    resourceSelector: z
      .string()
      .optional()
      .openapi({ description: 'Absent: any resource of its environments' }),
    jobAgents: z.array(JobAgentEntrySchema),
    jobAgentSelector: z.string().openapi({
      description:
        'CEL over `jobAgent`: each matching agent runs a job (when `jobAgents` is empty); "" when it has none',
    }),
    jobAgentConfig: JsonObjectSchema.openapi({ description: 'The configuration the selected agents get' }),
    metadata: MetadataSchema,
    systemIds: z.array(z.uuid()),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    selectorWarnings: SelectorWarningsSchema.optional(),
  })
  .openapi('Deployment');

/**
 * A deployment as written. Besides `jobAgents[]`, the applier's spelling is accepted: `jobAgent:
 * {ref}` with `jobAgentConfig`, which becomes one entry; and Ctrlplane's: `jobAgentSelector` (CEL
 * over `jobAgent`) with `jobAgentConfig`, stored as they are.
 */
export const DeploymentBody = z
  .object({
    name: Name,
    slug: Slug,
    description: Description,
    resourceSelector: celExpression('resource').nullish().openapi({
      description: 'CEL over `resource`; when absent, any resource of the deployment’s environments',
      example: 'resource.kind == "service"',
    }),
    jobAgents: z.array(JobAgentEntrySchema).max(50).optional(),
    jobAgent: z.object({ ref: z.string().min(1).max(200) }).optional(),
    jobAgentSelector: celExpression('jobAgent', { emptyIsNone: true })
      .nullish()
      .openapi({ description: 'CEL over `jobAgent`; "" or null: none (the agents are `jobAgents`)' }),
    jobAgentConfig: JsonObjectSchema.optional(),
    metadata: MetadataSchema.optional(),
  })
  .superRefine((body, ctx) => {
    // A deployment read back and sent again carries `jobAgentConfig: {}` and `jobAgentSelector: ""` beside its
    // `jobAgents`, or `jobAgents: []` beside its selector: empty values say nothing, so they clash with nothing.
    const givesConfig = body.jobAgentConfig !== undefined && Object.keys(body.jobAgentConfig).length > 0;
    if (body.jobAgents && (body.jobAgent || givesConfig)) {
      ctx.addIssue({
        code: 'custom',
        path: ['jobAgent'],
        message: 'use either jobAgents or jobAgent with jobAgentConfig',
      });
    }
    if (body.jobAgentSelector && (body.jobAgents?.length || body.jobAgent)) {
      ctx.addIssue({
        code: 'custom',
        path: ['jobAgentSelector'],
        message: 'use either jobAgentSelector or jobAgents (or jobAgent)',
      });
    }
    if (givesConfig && !body.jobAgent && !body.jobAgentSelector) {
      ctx.addIssue({
        code: 'custom',
        path: ['jobAgentConfig'],
        message: 'jobAgentConfig needs jobAgentSelector or jobAgent.ref',
      });
    }
  })
  .transform(({ jobAgent, jobAgentConfig, jobAgents, jobAgentSelector, ...rest }) =>
    jobAgentSelector
      ? { ...rest, jobAgents: [], jobAgentSelector, jobAgentConfig: jobAgentConfig ?? {} }
      : {
          ...rest,
          jobAgents: jobAgents ?? (jobAgent ? [{ ref: jobAgent.ref, config: jobAgentConfig ?? {} }] : []),
          jobAgentSelector: null,
          jobAgentConfig: {},
        },
  )
  .openapi('DeploymentInput');

export const DeploymentParams = z.object({ workspaceId: z.uuid(), deploymentId: z.uuid() });

export function toDeployment(deployment: Deployment, systemIds: string[]): z.infer<typeof DeploymentSchema> {
  return {
    id: deployment.id,
    workspaceId: deployment.workspaceId,
    name: deployment.name,
    slug: deployment.slug,
    ...ifPresent('description', deployment.description),
    ...ifPresent('resourceSelector', deployment.resourceSelector),
    jobAgents: deployment.jobAgents.map((entry) => ({ ...entry, config: redactConfig(entry.config) })),
    jobAgentSelector: deployment.jobAgentSelector ?? '',
    jobAgentConfig: redactConfig(deployment.jobAgentConfig ?? {}),
    metadata: deployment.metadata,
    systemIds,
    createdAt: iso(deployment.createdAt),
    updatedAt: iso(deployment.updatedAt),
  };
}
