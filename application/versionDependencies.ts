import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError, ValidationError } from '../domain/errors';
import { DeploymentSchema, DeploymentVersionSchema, type DeploymentVersion } from '../db/entities';
import { wakeReleases } from '../db/releaseWake';
import { uuidArray } from '../db/sql';
import { findOwned } from './common';

/** A version's dependency on another deployment: its current version on the resource must match. */
export interface VersionDependency {
  deploymentVersionId: string;
  dependencyDeploymentId: string;
  versionSelector: string;
}

/** Dependency deployment id → its version selector, as a version is created with them. */
export type DependencyMap = Record<string, { versionSelector: string }>;

/**
 * Writes a version's dependencies in the caller's transaction (the version's creation, so its first
 * gate evaluation already sees them): each names another deployment of the workspace (404
 * otherwise), never the version's own (400).
 */
export async function writeDependencies(
  em: EntityManager,
  version: DeploymentVersion,
  dependencies: DependencyMap,
): Promise<VersionDependency[]> {
  const ids = Object.keys(dependencies);
  if (ids.length === 0) return [];
  if (ids.includes(version.deploymentId)) {
    throw new ValidationError('A version cannot depend on its own deployment', [
      { path: `body.dependencies.${version.deploymentId}`, message: "the version's own deployment" },
    ]);
  }
  const found = await em.find(DeploymentSchema, { id: { $in: ids }, workspaceId: version.workspaceId });
  const missing = ids.find((id) => !found.some((deployment) => deployment.id === id));
  if (missing) throw new NotFoundError('deployment', missing);
  const rows = ids.map((id) => ({
    deploymentVersionId: version.id,
    dependencyDeploymentId: id,
    versionSelector: dependencies[id]!.versionSelector,
  }));
  await em.execute(
    `INSERT INTO deployment_version_dependency (deployment_version_id, dependency_deployment_id, workspace_id, version_selector)
     SELECT ?::uuid, d.id, ?::uuid, d.selector FROM jsonb_to_recordset(?::jsonb) AS d(id uuid, selector text)
     ON CONFLICT (deployment_version_id, dependency_deployment_id)
       DO UPDATE SET version_selector = EXCLUDED.version_selector, updated_at = now()`,
    [
      version.id,
      version.workspaceId,
      JSON.stringify(rows.map((row) => ({ id: row.dependencyDeploymentId, selector: row.versionSelector }))),
    ],
  );
  return rows;
}

/** A version with its dependencies, as the API shows it. */
export interface VersionWithDependencies {
  version: DeploymentVersion;
  dependencies: DependencyMap;
}

/** Each version with its dependencies (an empty map for none), in the versions' order: one query. */
export async function withDependencies(
  em: EntityManager,
  versions: DeploymentVersion[],
): Promise<VersionWithDependencies[]> {
  const rows =
    versions.length === 0
      ? []
      : await em.execute<{ versionId: string; deploymentId: string; versionSelector: string }[]>(
          `SELECT deployment_version_id AS "versionId", dependency_deployment_id AS "deploymentId",
                  version_selector AS "versionSelector"
             FROM deployment_version_dependency WHERE deployment_version_id = ANY(?::uuid[])
            ORDER BY created_at, dependency_deployment_id`,
          [uuidArray(versions.map((version) => version.id))],
        );
  const maps = new Map<string, DependencyMap>(versions.map((version) => [version.id, {}]));
  for (const row of rows)
    maps.get(row.versionId)![row.deploymentId] = { versionSelector: row.versionSelector };
  return versions.map((version) => ({ version, dependencies: maps.get(version.id)! }));
}

/** The releases of the version still waiting at their gates: a changed dependency may let them go. */
async function wakeVersionReleases(em: EntityManager, versionId: string): Promise<void> {
  const pending = await em.execute<{ id: string }[]>(
    `SELECT id FROM release WHERE version_id = ? AND phase = 'pending'`,
    [versionId],
  );
  await wakeReleases(
    em,
    pending.map((row) => row.id),
  );
}

export class VersionDependencyStore {
  constructor(private readonly em: EntityManager) {}

  async list(workspaceId: string, versionId: string): Promise<VersionDependency[]> {
    await findOwned(this.em, DeploymentVersionSchema, workspaceId, versionId, 'deployment version');
    return this.em.execute<VersionDependency[]>(
      `SELECT deployment_version_id AS "deploymentVersionId", dependency_deployment_id AS "dependencyDeploymentId",
              version_selector AS "versionSelector"
         FROM deployment_version_dependency WHERE deployment_version_id = ? ORDER BY created_at, dependency_deployment_id`,
      [versionId],
    );
  }

  upsert(
    workspaceId: string,
    versionId: string,
    dependencyDeploymentId: string,
    versionSelector: string,
  ): Promise<VersionDependency> {
    return this.em.transactional(async (em) => {
      const version = await findOwned(
        em,
        DeploymentVersionSchema,
        workspaceId,
        versionId,
        'deployment version',
      );
      const [written] = await writeDependencies(em, version, {
        [dependencyDeploymentId]: { versionSelector },
      });
      await wakeVersionReleases(em, versionId);
      return written!;
    });
  }

  delete(workspaceId: string, versionId: string, dependencyDeploymentId: string): Promise<void> {
    return this.em.transactional(async (em) => {
      await findOwned(em, DeploymentVersionSchema, workspaceId, versionId, 'deployment version');
      const gone = await em.execute<unknown[]>(
        `DELETE FROM deployment_version_dependency WHERE deployment_version_id = ? AND dependency_deployment_id = ?
         RETURNING 1`,
        [versionId, dependencyDeploymentId],
      );
      if (gone.length === 0) throw new NotFoundError('dependency on deployment', dependencyDeploymentId);
      await wakeVersionReleases(em, versionId);
    });
  }
}
