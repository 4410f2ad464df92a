import { defineEntity, type InferEntity } from '@mikro-orm/core';
import type { JobAgentType } from '../../domain/jobAgentTypes';
import { timestamps, workspaceScoped } from './common';

/** Sensitive configuration values (domain/sensitive.ts) are stored sealed. */
export const JobAgentSchema = defineEntity({
  name: 'JobAgent',
  tableName: 'job_agent',
  uniques: [{ properties: ['workspaceId', 'name'] }],
  properties: (p) => ({
    ...workspaceScoped(),
    name: p.text(),
    type: p.text().$type<JobAgentType>(),
    config: p.json<Record<string, unknown>>(),
    metadata: p.json<Record<string, string>>(),
    ...timestamps(),
  }),
});
export type JobAgent = InferEntity<typeof JobAgentSchema>;
