import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { actorOf } from '../domain/audit';
import { refuseVersionAuthor, SYSTEM_ORIGIN, type AuditOrigin } from '../db/audit';
import { ConflictError } from '../domain/errors';
import type { Page, PageRequest } from '../domain/pagination';
import type { Principal } from '../domain/principal';
import { isTerminalReleasePhase, type ReleasePhase } from '../domain/releases';
import {
  ApprovalSchema,
  DeploymentVersionSchema,
  EnvironmentSchema,
  JobSchema,
  ReleaseSchema,
  type Approval,
  type ApprovalScopeState,
  type DeploymentVersion,
  type Job,
  type Release,
} from '../db/entities';
import { newId } from '../db/ids';
import { enqueueOrchestrations } from '../db/outbox';
import { authorRefusal } from '../engine/eligibility';
import { requestRedeploy } from '../engine/executor';
import { cancelOpenJobs } from '../engine/jobMoves';
import { openReleasesOfTargets, wakeReleases } from '../db/releaseWake';
import { uuidArray } from '../db/sql';
import { findOwned, listPage } from './common';

export interface ReleaseFilter {
  deploymentId?: string;
  environmentId?: string;
  resourceId?: string;
  versionId?: string;
  phase?: ReleasePhase;
}

/** A release with what its answer shows: its version and its latest job, if it has one. */
export interface ShownRelease {
  release: Release;
  version: DeploymentVersion;
  job?: Job;
}

export interface ApprovalInput {
  status: 'approved' | 'rejected';
  reason?: string | null;
}

export class ReleaseStore {
  constructor(
    private readonly em: EntityManager,
    /** Who the request acts as: a cancel's audit events are theirs. */
    private readonly origin: AuditOrigin = SYSTEM_ORIGIN,
  ) {}

  list(workspaceId: string, filter: ReleaseFilter, page: PageRequest): Promise<Page<Release>> {
    const where = Object.fromEntries(
      Object.entries({ workspaceId, ...filter }).filter(([, v]) => v !== undefined),
    );
    return listPage(this.em, ReleaseSchema, where, page);
  }

  get(workspaceId: string, id: string): Promise<Release> {
    return findOwned(this.em, ReleaseSchema, workspaceId, id, 'release');
  }

  async getShown(workspaceId: string, id: string): Promise<ShownRelease> {
    return (await this.shown([await this.get(workspaceId, id)]))[0]!;
  }

  /** Each release with its version and latest job, in order: one query per kind of record. */
  async shown(releases: Release[]): Promise<ShownRelease[]> {
    if (releases.length === 0) return [];
    const versions = new Map(
      (
        await this.em.find(DeploymentVersionSchema, { id: [...new Set(releases.map((r) => r.versionId))] })
      ).map((version) => [version.id, version]),
    );
    const latestJobs = new Map<string, Job>();
    const jobs = await this.em.find(
      JobSchema,
      { releaseId: releases.map((release) => release.id) },
      { orderBy: { createdAt: 'desc', id: 'desc' } },
    );
    for (const job of jobs)
      if (job.releaseId && !latestJobs.has(job.releaseId)) latestJobs.set(job.releaseId, job);
    return releases.map((release) => {
      const job = latestJobs.get(release.id);
      return { release, version: versions.get(release.versionId)!, ...(job ? { job } : {}) };
    });
  }

  /** A release's approval or rejection counts for its version in its environment. */
  async approve(
    workspaceId: string,
    releaseId: string,
    principal: Principal,
    input: ApprovalInput,
  ): Promise<Approval> {
    const release = await this.get(workspaceId, releaseId);
    const [approval] = await this.recordApprovals(
      workspaceId,
      release.versionId,
      [release.environmentId],
      principal,
      input,
    );
    return approval!;
  }

  /**
   * Ctrlplane's user-approval-records: one person's decision on a version for some environments.
   * A later decision by the same person replaces the earlier one and what it covered. An approval's
   * workflow records what it covers, then wakes the releases it concerns (docs/behaviour.md
   * "Approvals"); a rejection wakes them at once.
   */
  recordApprovals(
    workspaceId: string,
    versionId: string,
    environmentIds: string[],
    principal: Principal,
    input: ApprovalInput,
  ): Promise<Approval[]> {
    return this.em.transactional(async (em) => {
      const version = await findOwned(
        em,
        DeploymentVersionSchema,
        workspaceId,
        versionId,
        'deployment version',
      );
      for (const environmentId of environmentIds)
        await findOwned(em, EnvironmentSchema, workspaceId, environmentId, 'environment');
      const user = actorOf(principal);
      if (input.status === 'approved')
        await this.refuseAuthorApproval(em, workspaceId, version.id, environmentIds, user.id);
      const approvals = await writeDecisions(
        em,
        workspaceId,
        versionId,
        environmentIds,
        user,
        input.status,
        input.reason,
      );
      await announceDecisions(em, workspaceId, versionId, environmentIds, approvals, input.status);
      return approvals;
    });
  }

  /** An approval by a key that created or changed what ships is refused, and audited (docs/api.md "Approvals"). */
  private async refuseAuthorApproval(
    em: EntityManager,
    workspaceId: string,
    versionId: string,
    environmentIds: string[],
    userId: string,
  ): Promise<void> {
    const refusal = await authorRefusal(em, workspaceId, versionId, environmentIds, userId, 'approve it');
    if (!refusal) return;
    await refuseVersionAuthor(em, this.origin, refusal, {
      workspaceId,
      action: 'approval.refused',
      record: { type: 'version', id: versionId },
      details: { environmentIds },
    });
  }

  /** Cancels a release that has not finished: its active jobs end `cancelled` and its target is freed. */
  cancel(workspaceId: string, releaseId: string): Promise<Release> {
    return this.em.transactional(async (em) => {
      const release = await findOwned(em, ReleaseSchema, workspaceId, releaseId, 'release');
      await em.lock(release, LockMode.PESSIMISTIC_WRITE);
      if (isTerminalReleasePhase(release.phase)) {
        throw new ConflictError(`The release already ended: ${release.phase}`, 'release_ended');
      }
      const cancelled = await cancelOpenJobs(em, { releaseId }, 'release cancelled', this.origin);
      release.phase = 'cancelled';
      release.phaseReason = `cancelled${cancelled.length > 0 ? `; ${cancelled.length} active job(s) cancelled` : ''}`;
      release.completedAt = new Date();
      await em.flush();
      await em.execute(
        `UPDATE release_target_state SET active_release_id = NULL, updated_at = now()
          WHERE resource_id = ? AND environment_id = ? AND deployment_id = ? AND active_release_id = ?`,
        [release.resourceId, release.environmentId, release.deploymentId, releaseId],
      );
      const siblings = await openReleasesOfTargets(em, [release], releaseId);
      await wakeReleases(em, [releaseId, ...siblings]);
      return release;
    });
  }

  /**
   * Runs a release that ran again, with a new job once its policies allow; with an override reason,
   * without them, whether it ran or still waits at a gate. Every redeploy is recorded on the
   * release. 409 while it runs, or without an override before it ran.
   */
  redeploy(
    workspaceId: string,
    releaseId: string,
    principal: Principal,
    request: { overrideReason: string | null },
  ): Promise<Release> {
    return this.em.transactional(async (em) => {
      const release = await findOwned(em, ReleaseSchema, workspaceId, releaseId, 'release');
      await em.lock(release, LockMode.PESSIMISTIC_WRITE);
      if (release.phase === 'running')
        throw new ConflictError('The release is running; cancel it first', 'release_running');
      const { overrideReason } = request;
      if (!overrideReason && (await em.count(JobSchema, { releaseId })) === 0) {
        throw new ConflictError(
          'The release has not run yet: it waits for its policies. Approve it, or redeploy with overridePolicies and a reason',
          'release_not_run',
        );
      }
      const user = actorOf(principal);
      if (overrideReason) {
        const refusal = await authorRefusal(
          em,
          workspaceId,
          release.versionId,
          [release.environmentId],
          user.id,
          'override its policies',
        );
        if (refusal) {
          await refuseVersionAuthor(em, this.origin, refusal, {
            workspaceId,
            action: 'release.override_refused',
            record: { type: 'release', id: release.id },
          });
        }
      }
      await requestRedeploy(
        em,
        release.id,
        { at: new Date().toISOString(), by: user.name, overrideReason },
        overrideReason
          ? `redeploy requested by ${user.name}, overriding the policies: ${overrideReason}`
          : `redeploy requested by ${user.name}`,
      );
      await em.refresh(release);
      return release;
    });
  }
}

/**
 * One person's decision per environment, replacing their earlier one, with what the earlier one
 * covered forgotten. An approval counts once its workflow has recorded what it covers; a rejection
 * counts at once.
 */
async function writeDecisions(
  em: EntityManager,
  workspaceId: string,
  versionId: string,
  environmentIds: string[],
  user: { id: string; name: string },
  status: ApprovalInput['status'],
  reason: string | null | undefined,
): Promise<Approval[]> {
  const scope: ApprovalScopeState = status === 'approved' ? 'pending' : 'recorded';
  const approvals: Approval[] = [];
  for (const environmentId of environmentIds) {
    const existing = await em.findOne(ApprovalSchema, { versionId, environmentId, userId: user.id });
    const fields = { status, reason: reason ?? null, userName: user.name, scope };
    approvals.push(
      existing
        ? em.assign(existing, { ...fields, decision: existing.decision + 1 })
        : em.create(ApprovalSchema, {
            id: newId(),
            workspaceId,
            versionId,
            environmentId,
            userId: user.id,
            ...fields,
            decision: 1,
          }),
    );
  }
  await em.flush();
  await em.execute(`DELETE FROM approval_scope WHERE approval_id = ANY(?::uuid[])`, [
    uuidArray(approvals.map((approval) => approval.id)),
  ]);
  return approvals;
}

/** Approvals go to their workflows to record what they cover; a rejection wakes the waiting releases. */
async function announceDecisions(
  em: EntityManager,
  workspaceId: string,
  versionId: string,
  environmentIds: string[],
  approvals: Approval[],
  status: ApprovalInput['status'],
): Promise<void> {
  if (status === 'approved') {
    await enqueueOrchestrations(
      em,
      approvals.map((approval) => ({
        kind: 'approval.scope' as const,
        workspaceId,
        approvalId: approval.id,
        decision: approval.decision,
      })),
    );
    return;
  }
  const waiting = await em.execute<{ id: string }[]>(
    `SELECT id FROM release WHERE version_id = ? AND environment_id = ANY(?::uuid[]) AND phase = 'pending'`,
    [versionId, uuidArray(environmentIds)],
  );
  await wakeReleases(
    em,
    waiting.map((row) => row.id),
  );
}
