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
    /** Ctrlplane's alternative to `jobAgents`: CEL over `jobAgent`; each agent it matches runs a job. */
    jobAgentSelector: p.text().nullable(),
    /** The configuration those agents get (secrets sealed). */
    jobAgentConfig: p.json<Record<string, unknown>>(),
    metadata: p.json<Record<string, string>>(),
    ...timestamps(),
  }),
});
export type Deployment = InferEntity<typeof DeploymentSchema>;
