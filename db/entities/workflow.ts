import { defineEntity, type InferEntity } from '@mikro-orm/core';
import type { WorkflowRunStatus } from '../../domain/workflowRunProgress';
import type { WorkflowAgentEntry, WorkflowInputDeclaration } from '../../domain/workflowRuns';
import { createdAt, timestamps, workspaceScoped } from './common';

/** A workflow: typed inputs and job agent entries, run on demand (domain/workflowRuns.ts). */
export const WorkflowSchema = defineEntity({
  name: 'Workflow',
  tableName: 'workflow',
  properties: (p) => ({
    ...workspaceScoped(),
    name: p.text(),
    slug: p.text(),
    inputs: p.json<WorkflowInputDeclaration[]>(),
    /** Each entry's secret configuration keys sealed, bound to the workflow. */
    jobAgents: p.json<WorkflowAgentEntry[]>(),
    ...timestamps(),
  }),
});
export type Workflow = InferEntity<typeof WorkflowSchema>;

/** One run of a workflow: its input values and, through its jobs, its progress. */
export const WorkflowRunSchema = defineEntity({
  name: 'WorkflowRun',
  tableName: 'workflow_run',
  properties: (p) => ({
    ...workspaceScoped(),
    workflowId: p.uuid(),
    inputs: p.json<Record<string, unknown>>(),
    status: p.text().$type<WorkflowRunStatus>(),
    ...createdAt(),
    completedAt: p.datetime().nullable(),
  }),
});
export type WorkflowRun = InferEntity<typeof WorkflowRunSchema>;
