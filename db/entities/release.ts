import { defineEntity, type InferEntity } from '@mikro-orm/core';
import type { GateEvaluation } from '../../domain/gates';
import type { ReleasePhase } from '../../domain/releases';
import { timestamps, workspaceScoped } from './common';

/** The intent to deploy one version to one release target (SPEC "Release"). */
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
    /** Set by a redeploy: the next jobs start without gates (but never on a busy target). */
    redeployRequestedAt: p.datetime().nullable(),
    ...timestamps(),
    completedAt: p.datetime().nullable(),
  }),
});
export type Release = InferEntity<typeof ReleaseSchema>;
