import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { groupBy } from '../../domain/grouping';
import type { SecretBox } from '../../db/secrets';
import { uuidArray } from '../../db/sql';
import { RELEASE_ROW_COLUMNS, type ReleaseRow } from './jobCreation';
import { planTargets, type PlanTargetRow } from './targetPlans';
import type { LoadedRelease } from '../../workflows/activityResults';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * What each release would ship now, as one digest (docs/behaviour.md "Approvals"): its version and
 * environment, and each job's merged configuration and resolved variables as job creation would
 * render them, secrets as hashes of their values (so a changed secret changes it, and no secret is
 * kept). An approval records it; if it differs when the release is about to start, the approval no
 * longer counts. Releases that are unknown are absent.
 */
export async function shipDigests(
  em: EntityManager,
  box: SecretBox,
  releaseIds: readonly string[],
): Promise<Map<string, string>> {
  if (releaseIds.length === 0) return new Map();
  const rows = await em.execute<(ReleaseRow & PlanTargetRow)[]>(
    `SELECT ${RELEASE_ROW_COLUMNS.split(', ')
      .map((column) => `rl.${column}`)
      .join(', ')},
            r.name AS resource_name, e.name AS environment_name, s.current_release_id
       FROM release rl
       JOIN resource r ON r.id = rl.resource_id
       JOIN environment e ON e.id = rl.environment_id
       LEFT JOIN release_target_state s ON s.resource_id = rl.resource_id AND s.environment_id = rl.environment_id
                                       AND s.deployment_id = rl.deployment_id
      WHERE rl.id = ANY(?::uuid[])`,
    [uuidArray(releaseIds)],
  );
  const digests = new Map<string, string>();
  const sealAsHash = (value: unknown) => `sha256:${sha256(JSON.stringify(value))}`;
  for (const [deploymentId, releases] of groupBy(rows, (row) => row.deployment_id)) {
    const plans = await planTargets(em, box, deploymentId, releases, releases, undefined, sealAsHash);
    releases.forEach((release, index) => {
      const shipped = plans[index]!.results.map((result) => [result.proposed, result.message]);
      digests.set(release.id, sha256(JSON.stringify([release.version_id, release.environment_id, shipped])));
    });
  }
  return digests;
}

/** A pending release's facts with what it would ship now, when one of its approvals recorded a digest. */
export async function withShipDigest(
  em: EntityManager,
  box: SecretBox,
  loaded: LoadedRelease,
): Promise<LoadedRelease> {
  if (!loaded.facts.approvals.some((approval) => approval.digest !== undefined)) return loaded;
  const shipDigest = (await shipDigests(em, box, [loaded.releaseId])).get(loaded.releaseId);
  return shipDigest ? { ...loaded, facts: { ...loaded.facts, shipDigest } } : loaded;
}

/**
 * Binds approvals to what their releases would ship now: for each approval, a digest per pending
 * release of its version in its environment (a rejection keeps none); a later decision replaces them.
 */
export async function recordApprovalDigests(
  em: EntityManager,
  box: SecretBox,
  approvals: readonly { id: string; versionId: string; environmentId: string; status: string }[],
): Promise<void> {
  if (approvals.length === 0) return;
  await em.execute(`DELETE FROM approval_digest WHERE approval_id = ANY(?::uuid[])`, [
    uuidArray(approvals.map((approval) => approval.id)),
  ]);
  const approved = approvals.filter((approval) => approval.status === 'approved');
  if (approved.length === 0) return;
  const pending = await em.execute<{ id: string; approval_id: string }[]>(
    `SELECT rl.id, k.approval_id
       FROM unnest(?::uuid[], ?::uuid[], ?::uuid[]) AS k(approval_id, version_id, environment_id)
       JOIN release rl ON rl.version_id = k.version_id AND rl.environment_id = k.environment_id
      WHERE rl.phase = 'pending'`,
    [
      uuidArray(approved.map((approval) => approval.id)),
      uuidArray(approved.map((approval) => approval.versionId)),
      uuidArray(approved.map((approval) => approval.environmentId)),
    ],
  );
  const digests = await shipDigests(em, box, [...new Set(pending.map((row) => row.id))]);
  await em.execute(
    `INSERT INTO approval_digest (approval_id, release_id, digest)
     SELECT * FROM unnest(?::uuid[], ?::uuid[], ?::text[])`,
    [
      uuidArray(pending.map((row) => row.approval_id)),
      uuidArray(pending.map((row) => row.id)),
      pending.map((row) => digests.get(row.id)!),
    ],
  );
}
