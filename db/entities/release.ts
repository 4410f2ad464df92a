import { defineEntity, type InferEntity } from '@mikro-orm/core';
import type { GateEvaluation } from '../../domain/gates';
import type { ReleasePhase } from '../../domain/releases';
import { timestamps, workspaceScoped } from './common';

/** The intent to deploy one version to one release target (docs/behaviour.md "Release"). */
export const ReleaseSchema = defineEntity({
  name: 'Release',
  tableName: 'release',
  properties: (p) => ({
    ...workspaceScoped(),
    deploymentId: p.uuid(),
    environmentId: p.uuid(),
    resourceId: p.uuid(),
    versionId: p.uuid(),
    phase: p.text().$type<ReleasePhase>(),
    phaseReason: p.text().nullable(),
    /** The last gate evaluation, so a waiting release can say why. */
    evaluation: p.json<GateEvaluation>().nullable(),
    /** Set by a redeploy: the next jobs start again (never on a busy target). */
    redeployRequestedAt: p.datetime().nullable(),
    /** Set by a redeploy that overrides the policies: why. The next jobs start without gates. */
    redeployOverrideReason: p.text().nullable(),
    /** Every redeploy asked for: when, by whom, and the override's reason if it had one. */
    redeploys: p.json<RedeployRecord[]>(),
    ...timestamps(),
    completedAt: p.datetime().nullable(),
  }),
});
export type Release = InferEntity<typeof ReleaseSchema>;

export interface RedeployRecord {
  at: string;
  by: string;
  overrideReason: string | null;
  /** Set when the redeploy is a rollback: the release whose failure caused it. */
  rollbackOf?: string;
}
