import { defineEntity, type InferEntity } from '@mikro-orm/core';
import { timestamps, workspaceScoped } from './common';

/** An entry of a deployment's `jobAgents`: which agent runs its jobs, with what configuration, for which resources. */
export interface JobAgentEntry {
  ref: string;
  config: Record<string, unknown>;
  selector?: string;
}

export const DeploymentSchema = defineEntity({
  name: 'Deployment',
  tableName: 'deployment',
  uniques: [{ properties: ['workspaceId', 'slug'] }],
  properties: (p) => ({
    ...workspaceScoped(),
    name: p.text(),
    slug: p.text(),
    description: p.text().nullable(),
    resourceSelector: p.text().nullable(),
    jobAgents: p.json<JobAgentEntry[]>(),
    metadata: p.json<Record<string, string>>(),
    ...timestamps(),
  }),
});
export type Deployment = InferEntity<typeof DeploymentSchema>;
