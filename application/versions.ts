import type { EntityManager } from '@mikro-orm/postgresql';
import { actorOf } from '../domain/audit';
import { ConflictError } from '../domain/errors';
import type { BoundedPage, FilterPageRequest } from '../domain/pagination';
import type { CelQuery } from '../domain/selectors';
import { becomesReady, canMoveVersion, type VersionStatus } from '../domain/versionStatus';
import { DeploymentSchema, DeploymentVersionSchema, type DeploymentVersion } from '../db/entities';
import { recordWriteEvent, SYSTEM_ORIGIN, type AuditOrigin } from '../db/audit';
import { conflictOnDuplicate } from '../db/errors';
import { newId } from '../db/ids';
import { enqueueOrchestration } from '../db/outbox';
import { lockWorkspaceTargets } from '../engine/targets';
import { wakeReleases } from '../db/releaseWake';
import {
  withDependencies,
  writeDependencies,
  type DependencyMap,
  type VersionWithDependencies,
} from './versionDependencies';
import type { SecretBox } from '../db/secrets';
import { sealConfig } from '../db/sensitiveValues';
import { definedOnly, findOwned, listFiltered } from './common';
import type { Principal } from '../domain/principal';

export interface NewVersion {
  tag: string;
  name?: string | null;
  status?: VersionStatus;
  config?: Record<string, unknown>;
  jobAgentConfig?: Record<string, unknown>;
  metadata?: Record<string, string>;
}

export type VersionPatch = Partial<NewVersion>;

/**
 * The single path by which a version becomes eligible for releases, whether it is created ready
 * or moved there later: its rollout is marked pending and the fan-out is enqueued with the write.
 * It holds the workspace's target lock until commit, so every release target is either committed
 * before its rollout reads targets or sees it ready (engine/targets/releaseTargetSync.ts).
 */
export async function markVersionReady(em: EntityManager, version: DeploymentVersion): Promise<void> {
  await lockWorkspaceTargets(em, version.workspaceId);
  version.rolloutStatus = 'pending';
  await enqueueOrchestration(em, {
    kind: 'version.ready',
    workspaceId: version.workspaceId,
    deploymentId: version.deploymentId,
    versionId: version.id,
  });
}

export class VersionStore {
  constructor(
    private readonly em: EntityManager,
    private readonly secrets: SecretBox,
    /** The request the writes are: a version's creation and update write its event themselves. */
    private readonly origin: AuditOrigin = SYSTEM_ORIGIN,
  ) {}

  /** A new version, with its dependencies (if any) written in the same transaction as it. */
  async create(
    workspaceId: string,
    deploymentId: string,
    input: NewVersion & { dependencies?: DependencyMap },
    principal?: Principal,
  ): Promise<VersionWithDependencies> {
    const version = await conflictOnDuplicate(
      () =>
        this.em.transactional(async (em) => {
          await findOwned(em, DeploymentSchema, workspaceId, deploymentId, 'deployment');
          const id = newId();
          const version = em.create(DeploymentVersionSchema, {
            id,
            workspaceId,
            deploymentId,
            tag: input.tag,
            name: input.name || input.tag,
            status: input.status ?? 'ready',
            config: input.config ?? {},
            jobAgentConfig: sealConfig(
              this.secrets.forRecord(workspaceId, 'version', id),
              input.jobAgentConfig ?? {},
              undefined,
              'body.jobAgentConfig',
            ),
            metadata: input.metadata ?? {},
            rolloutStatus: null,
            rolloutReleaseCount: 0,
            rolloutCompletedAt: null,
            createdById: principal ? actorOf(principal).id : null,
          });
          if (input.dependencies && Object.keys(input.dependencies).length > 0) {
            await em.flush();
            await writeDependencies(em, version, input.dependencies);
          }
          if (version.status === 'ready') await markVersionReady(em, version);
          await recordWriteEvent(em, this.origin, { id, created: true });
          return version;
        }),
      `Version tag "${input.tag}" already exists for this deployment`,
    );
    return { version, dependencies: input.dependencies ?? {} };
  }

  /** A partial update; status moves follow domain/versionStatus.ts (409 otherwise). */
  async update(workspaceId: string, id: string, patch: VersionPatch): Promise<VersionWithDependencies> {
    const updated = await conflictOnDuplicate(
      () =>
        this.em.transactional(async (em) => {
          const version = await findOwned(em, DeploymentVersionSchema, workspaceId, id, 'deployment version');
          const from = version.status;
          if (patch.status && !canMoveVersion(from, patch.status)) {
            throw new ConflictError(
              `A version cannot move from ${from} to ${patch.status}`,
              'invalid_status_move',
            );
          }
          const { jobAgentConfig, ...fields } = definedOnly(patch);
          em.assign(version, fields);
          await recordVersionEditor(em, version, this.origin);
          if (jobAgentConfig) {
            version.jobAgentConfig = sealConfig(
              this.secrets.forRecord(workspaceId, 'version', version.id),
              jobAgentConfig,
              version.jobAgentConfig,
              'body.jobAgentConfig',
            );
          }
          if (patch.status && becomesReady(from, patch.status)) await markVersionReady(em, version);
          if (from === 'ready' && version.status !== 'ready') {
            // Its open releases withdraw; one already running finishes (a running job is never preempted).
            const open = await em.execute<{ id: string }[]>(
              `SELECT id FROM release WHERE version_id = ? AND phase IN ('pending', 'running')`,
              [version.id],
            );
            await wakeReleases(
              em,
              open.map((row) => row.id),
            );
          }
          await recordWriteEvent(em, this.origin, { id: version.id });
          return version;
        }),
      `Version tag "${patch.tag}" already exists for this deployment`,
    );
    return (await withDependencies(this.em, [updated]))[0]!;
  }

  async get(workspaceId: string, id: string): Promise<VersionWithDependencies> {
    const version = await findOwned(this.em, DeploymentVersionSchema, workspaceId, id, 'deployment version');
    return (await withDependencies(this.em, [version]))[0]!;
  }

  async list(
    workspaceId: string,
    deploymentId: string,
    page: FilterPageRequest,
    filter: { status?: VersionStatus; cel?: CelQuery<'version'> } = {},
  ): Promise<BoundedPage<VersionWithDependencies>> {
    await findOwned(this.em, DeploymentSchema, workspaceId, deploymentId, 'deployment');
    const where = filter.status ? { deploymentId, status: filter.status } : { deploymentId };
    const versions = await listFiltered(
      this.em,
      workspaceId,
      DeploymentVersionSchema,
      where,
      page,
      filter.cel,
      'desc',
    );
    return { ...versions, items: await withDependencies(this.em, versions.items) };
  }
}

/**
 * The key that changes a version after another created it becomes one of its authors
 * (domain/versionAuthors.ts): under a rule requiring another approver, it may not approve it.
 */
async function recordVersionEditor(
  em: EntityManager,
  version: DeploymentVersion,
  origin: AuditOrigin,
): Promise<void> {
  const { actor } = origin;
  if (actor.type !== 'key' || actor.id === version.createdById) return;
  await em.execute(
    `UPDATE deployment_version SET changed_by_ids = array_append(changed_by_ids, ?)
      WHERE id = ? AND NOT (? = ANY(changed_by_ids))`,
    [actor.id, version.id, actor.id],
  );
}
