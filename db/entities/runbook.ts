import { defineEntity, type InferEntity } from '@mikro-orm/core';
import type { RunbookRunStatus } from '../../domain/runbookRunProgress';
import type { RunbookAgentEntry, RunbookInputDeclaration } from '../../domain/runbookRuns';
import { createdAt, timestamps, workspaceScoped } from './common';

/**
 * A runbook (Ctrlplane's "workflow"): typed inputs and job agent entries, run on demand
 * (domain/runbookRuns.ts). Its table keeps Ctrlplane's name, `workflow`.
 */
export const RunbookSchema = defineEntity({
  name: 'Runbook',
  tableName: 'workflow',
  properties: (p) => ({
    ...workspaceScoped(),
    name: p.text(),
    slug: p.text(),
    inputs: p.json<RunbookInputDeclaration[]>(),
    /** Each entry's secret configuration keys sealed, bound to the runbook. */
    jobAgents: p.json<RunbookAgentEntry[]>(),
    ...timestamps(),
  }),
});
export type Runbook = InferEntity<typeof RunbookSchema>;

/** One run of a runbook: its input values and, through its jobs, its progress. Table `workflow_run`. */
export const RunbookRunSchema = defineEntity({
  name: 'RunbookRun',
  tableName: 'workflow_run',
  properties: (p) => ({
    ...workspaceScoped(),
    runbookId: p.uuid().fieldName('workflow_id'),
    inputs: p.json<Record<string, unknown>>(),
    status: p.text().$type<RunbookRunStatus>(),
    ...createdAt(),
    completedAt: p.datetime().nullable(),
  }),
});
export type RunbookRun = InferEntity<typeof RunbookRunSchema>;
