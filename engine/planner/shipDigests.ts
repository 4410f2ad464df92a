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

/**
 * A pending release's facts with what it would ship now, when it has approvals: those it has not
 * seen yet are bound to it here, at its first look after them (woken by the approval, so what they
 * approved is what it would ship then), and the rest are compared with it by the gates. Runs in the
 * release's activity, never in the request that approves: a version approved on 10,000 targets
 * plans each release in its own workflow.
 */
export async function withShipDigest(
  em: EntityManager,
  box: SecretBox,
  loaded: LoadedRelease,
  /** False for a read (an explanation): approvals not bound yet count as they are, and nothing is written. */
  bind = true,
): Promise<LoadedRelease> {
  const { facts } = loaded;
  if (!facts.approvals.some((approval) => approval.status === 'approved')) return loaded;
  const shipDigest = (await shipDigests(em, box, [loaded.releaseId])).get(loaded.releaseId);
  if (!shipDigest) return loaded;
  if (!bind) return { ...loaded, facts: { ...facts, shipDigest } };
  if (facts.approvals.some((approval) => approval.status === 'approved' && approval.digest === undefined)) {
    await em.execute(
      `INSERT INTO approval_digest (approval_id, release_id, digest)
       SELECT a.id, ?, ? FROM approval a
        WHERE a.version_id = ? AND a.environment_id = ? AND a.status = 'approved'
       ON CONFLICT (release_id, approval_id) DO NOTHING`,
      [loaded.releaseId, shipDigest, facts.version.id, facts.release.environmentId],
    );
  }
  const approvals = facts.approvals.map((approval) =>
    approval.status === 'approved' && approval.digest === undefined
      ? { ...approval, digest: shipDigest }
      : approval,
  );
  return { ...loaded, facts: { ...facts, approvals, shipDigest } };
}

/** A new decision of a key replaces its approval: what it bound to is forgotten, and binds again at the next look. */
export async function unbindApprovals(em: EntityManager, approvalIds: readonly string[]): Promise<void> {
  if (approvalIds.length === 0) return;
  await em.execute(`DELETE FROM approval_digest WHERE approval_id = ANY(?::uuid[])`, [
    uuidArray(approvalIds),
  ]);
}
