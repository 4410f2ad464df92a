import type { JobAgent } from '../../db/entities';
import { redactConfig } from '../../db/sensitiveValues';
import { canonicalAgentConfig, JOB_AGENT_CONFIG_SCHEMAS } from '../../domain/jobAgents';
import { JOB_AGENT_TYPES, type JobAgentType } from '../../domain/jobAgentTypes';
import { iso, JsonObjectSchema, MetadataSchema, Name, Timestamp } from './common';
import { z } from './zod';

export const JobAgentSchema = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    name: z.string(),
    type: z.enum(JOB_AGENT_TYPES),
    config: JsonObjectSchema.openapi({
      description: 'Secrets (api_key, token, private_key, …) show as {"sensitive": true}',
    }),
    metadata: MetadataSchema,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .openapi('JobAgent');

function bodyFor<T extends JobAgentType>(type: T) {
  const config: z.ZodType<Record<string, unknown>> = JOB_AGENT_CONFIG_SCHEMAS[type];
  return z.object({
    name: Name,
    type: z.literal(type),
    config: z.preprocess((value) => canonicalAgentConfig(type, value ?? {}), config),
    metadata: MetadataSchema.optional(),
  });
}

/** The configuration is validated for the agent's type. */
export const JobAgentBody = z
  .discriminatedUnion('type', [
    bodyFor('http-pull'),
    bodyFor('github-app'),
    bodyFor('argo-cd'),
    bodyFor('tfe'),
    bodyFor('test-runner'),
  ])
  .openapi('JobAgentInput');

export const JobAgentParams = z.object({ workspaceId: z.uuid(), jobAgentId: z.uuid() });

export function toJobAgent(agent: JobAgent): z.infer<typeof JobAgentSchema> {
  return {
    id: agent.id,
    workspaceId: agent.workspaceId,
    name: agent.name,
    type: agent.type,
    config: redactConfig(agent.config),
    metadata: agent.metadata,
    createdAt: iso(agent.createdAt),
    updatedAt: iso(agent.updatedAt),
  };
}
