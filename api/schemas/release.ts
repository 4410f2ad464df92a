import type { Approval, DeploymentVersion, Job, Release } from '../../db/entities';
import type { ShownRelease } from '../../application/releases';
import { isSealedValue, redactTree } from '../../db/sensitiveValues';
import { displayText } from '../../domain/displayText';
import { RELEASE_PHASES } from '../../domain/releases';
import { releaseTargetKey } from '../../domain/releaseTargets';
import { iso, isoOrNull, JsonObjectSchema, pageQuery, Timestamp } from './common';
import { z } from './zod';

export const RuleEvaluationSchema = z.object({
  kind: z.string(),
  policyId: z.uuid().optional(),
  ruleId: z.uuid().optional(),
  state: z.enum(['passed', 'waiting', 'blocked']),
  reason: z.string(),
  nextEvaluationAt: Timestamp.optional(),
  waitingOn: z
    .union([
      z.object({ environmentId: z.uuid(), successes: z.number().int() }),
      z.object({ deploymentId: z.uuid() }),
    ])
    .optional(),
});

export const EvaluationSchema = z
  .object({
    decision: z.enum(['proceed', 'wait', 'blocked', 'superseded', 'withdrawn']),
    reason: z.string(),
    rules: z.array(RuleEvaluationSchema),
    nextEvaluationAt: Timestamp.optional(),
    evaluatedAt: Timestamp,
  })
  .openapi('ReleaseEvaluation', {
    description: 'Why the release waits: each rule with its state and reason',
  });

export const ReleaseSchema = z
  .object({
    id: z.uuid(),
    deploymentId: z.uuid(),
    environmentId: z.uuid(),
    resourceId: z.uuid(),
    versionId: z.uuid(),
    releaseTargetKey: z.string(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    completedAt: Timestamp.nullable(),
    phase: z
      .enum(RELEASE_PHASES)
      .openapi({ description: 'Where the release is in its life (not a status of the spec)' }),
    phaseReason: z.string().nullable(),
    evaluation: EvaluationSchema.nullable(),
    redeploys: z
      .array(
        z.object({
          at: Timestamp,
          by: z.string(),
          overrideReason: z
            .string()
            .nullable()
            .openapi({ description: 'Set when the redeploy overrode the policies' }),
          rollbackOf: z.uuid().optional().openapi({
            description: 'Set when the redeploy is a rollback: the release whose failure caused it',
          }),
        }),
      )
      .openapi({ description: 'Every redeploy of the release, oldest first' }),
  })
  .openapi('Release');

/** A release's version as Ctrlplane's `Release` carries it. */
export const ReleaseVersionSchema = z
  .object({
    id: z.uuid(),
    name: z.string().openapi({ description: 'The tag when the version has no name' }),
    tag: z.string(),
    deploymentId: z.uuid(),
    status: z.enum(['building', 'ready', 'failed']),
    config: JsonObjectSchema,
    jobAgentConfig: JsonObjectSchema.openapi({ description: 'Secrets show as {"sensitive": true}' }),
    metadata: z.record(z.string(), z.string()),
    createdAt: Timestamp,
  })
  .openapi('ReleaseVersion');

/**
 * A release as Ctrlplane's clients read it (`GET /releases/{id}`, a target's desired and current
 * release, a job's release): ours, with its version, its target and its variables beside.
 */
export const ReleaseWithVersionSchema = ReleaseSchema.extend({
  version: ReleaseVersionSchema,
  variables: z.record(z.string(), z.unknown()).openapi({
    description:
      'The variables its latest job was given that are not sensitive (an object value as {object}); empty until it has a job',
  }),
  encryptedVariables: z.array(z.string()).openapi({ description: 'The keys of its sensitive variables' }),
  releaseTarget: z.object({ resourceId: z.uuid(), environmentId: z.uuid(), deploymentId: z.uuid() }),
}).openapi('ReleaseWithVersion');

export function toReleaseWithVersion({
  release,
  version,
  job,
}: ShownRelease): z.infer<typeof ReleaseWithVersionSchema> {
  return {
    ...toRelease(release),
    version: toReleaseVersion(version),
    ...releaseVariables(job),
    releaseTarget: {
      resourceId: release.resourceId,
      environmentId: release.environmentId,
      deploymentId: release.deploymentId,
    },
  };
}

/** The variables a job's dispatch context recorded: values in clear, sensitive ones by key only. */
function releaseVariables(
  job: Job | undefined,
): Pick<z.infer<typeof ReleaseWithVersionSchema>, 'variables' | 'encryptedVariables'> {
  const recorded =
    (job?.dispatchContext as { variables?: Record<string, unknown> } | undefined)?.variables ?? {};
  const variables: Record<string, unknown> = {};
  const encryptedVariables: string[] = [];
  for (const [key, value] of Object.entries(recorded)) {
    if (isSealedValue(value)) encryptedVariables.push(key);
    else if (value !== null) variables[key] = typeof value === 'object' ? { object: value } : value;
  }
  return { variables, encryptedVariables };
}

function toReleaseVersion(version: DeploymentVersion): z.infer<typeof ReleaseVersionSchema> {
  return {
    id: version.id,
    name: version.name ?? version.tag,
    tag: version.tag,
    deploymentId: version.deploymentId,
    status: version.status,
    config: version.config,
    jobAgentConfig: redactTree(version.jobAgentConfig),
    metadata: version.metadata,
    createdAt: iso(version.createdAt),
  };
}

export const RedeployBody = z
  .strictObject({
    overridePolicies: z.boolean().optional().openapi({
      description: 'Start the new job without approvals, windows or progression; needs a reason',
    }),
    reason: displayText(z.string().trim().min(1).max(2000), 'multi').optional(),
  })
  .refine((body) => !body.overridePolicies || body.reason !== undefined, {
    path: ['reason'],
    message: 'overriding the policies needs a reason, which is recorded on the release',
  })
  .openapi('RedeployInput');

export const ReleaseListQuery = pageQuery().extend({
  deploymentId: z.uuid().optional(),
  environmentId: z.uuid().optional(),
  resourceId: z.uuid().optional(),
  versionId: z.uuid().optional(),
  phase: z.enum(RELEASE_PHASES).optional(),
});

export const ReleaseParams = z.object({ workspaceId: z.uuid(), releaseId: z.uuid() });

export const ApprovalBody = z
  .object({ reason: displayText(z.string().max(2000), 'multi').optional() })
  .openapi('ApprovalInput');

export const UserApprovalRecordsBody = z
  .object({
    status: z.enum(['approved', 'rejected']),
    environmentIds: z.array(z.uuid()).min(1).max(100),
    reason: displayText(z.string().max(2000), 'multi').optional(),
  })
  .openapi('UserApprovalRecordsInput');

export const ApprovalSchema = z
  .object({
    versionId: z.uuid(),
    environmentId: z.uuid(),
    userId: z.string(),
    userName: z.string(),
    status: z.enum(['approved', 'rejected']),
    reason: z.string().nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .openapi('UserApprovalRecord');

export function toRelease(release: Release): z.infer<typeof ReleaseSchema> {
  return {
    id: release.id,
    deploymentId: release.deploymentId,
    environmentId: release.environmentId,
    resourceId: release.resourceId,
    versionId: release.versionId,
    releaseTargetKey: releaseTargetKey(release),
    createdAt: iso(release.createdAt),
    updatedAt: iso(release.updatedAt),
    completedAt: isoOrNull(release.completedAt),
    phase: release.phase,
    phaseReason: release.phaseReason ?? null,
    evaluation: release.evaluation ?? null,
    redeploys: release.redeploys ?? [],
  };
}

export function toApproval(approval: Approval): z.infer<typeof ApprovalSchema> {
  return {
    versionId: approval.versionId,
    environmentId: approval.environmentId,
    userId: approval.userId,
    userName: approval.userName,
    status: approval.status,
    reason: approval.reason ?? null,
    createdAt: iso(approval.createdAt),
    updatedAt: iso(approval.updatedAt),
  };
}
