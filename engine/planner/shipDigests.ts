import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { groupBy } from '../../domain/grouping';
import type { ApprovalFact } from '../../domain/rules/anyApproval';
import type { SecretBox } from '../../db/secrets';
import { newId } from '../../db/ids';
import { uuidArray } from '../../db/sql';
import { RELEASE_ROW_COLUMNS, type ReleaseRow } from './releaseRows';
import { planTargets, type PlanTargetRow } from './targetPlans';
import type { LoadedRelease } from '../../domain/activityResults';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** A release, or a target's would-be release, with what its digest reads of its target. */
export type ShipDigestRow = ReleaseRow & PlanTargetRow & { resource_identifier: string };

/**
 * The release context's fields that name the target itself (domain/jobPlan.ts): left out of a
 * digest where they hold the target's own values, so two targets that would get the same thing
 * have the same digest, and a target created after an approval can be compared with what its
 * approver saw.
 */
function withoutTargetIdentity(proposed: string, row: ShipDigestRow): unknown {
  if (proposed === '') return '';
  const inputs = JSON.parse(proposed) as { config?: Record<string, unknown>; variables?: unknown };
  const config = { ...inputs.config };
  const own = {
    releaseId: row.id,
    resourceIdentifier: row.resource_identifier,
    resourceName: row.resource_name,
  };
  for (const [key, value] of Object.entries(own)) if (config[key] === value) delete config[key];
  return { ...inputs, config };
}

/**
 * What each row would ship now, as one digest (docs/behaviour.md "Approvals"): its version and
 * environment, and each job's merged configuration and resolved variables as job creation would
 * render them (the target's own name and ids aside), secrets as hashes of their values (so a changed
 * secret changes it, and no secret is kept). Keyed by row id.
 */
export async function shipDigests(
  em: EntityManager,
  box: SecretBox,
  rows: readonly ShipDigestRow[],
): Promise<Map<string, string>> {
  const digests = new Map<string, string>();
  const sealAsHash = (value: unknown) => `sha256:${sha256(JSON.stringify(value))}`;
  for (const [deploymentId, releases] of groupBy(rows, (row) => row.deployment_id)) {
    const plans = await planTargets(em, box, deploymentId, releases, releases, undefined, sealAsHash);
    releases.forEach((release, index) => {
      const shipped = plans[index]!.results.map((result) => [
        withoutTargetIdentity(result.proposed, release),
        result.message,
      ]);
      digests.set(release.id, sha256(JSON.stringify([release.version_id, release.environment_id, shipped])));
    });
  }
  return digests;
}

/** The digests of what releases would ship now, by release id; releases that are unknown are absent. */
async function releaseShipDigests(
  em: EntityManager,
  box: SecretBox,
  releaseIds: readonly string[],
): Promise<Map<string, string>> {
  const rows = await em.execute<ShipDigestRow[]>(
    `SELECT ${RELEASE_ROW_COLUMNS.split(', ')
      .map((column) => `rl.${column}`)
      .join(', ')},
            r.name AS resource_name, r.identifier AS resource_identifier, e.name AS environment_name,
            s.current_release_id
       FROM release rl
       JOIN resource r ON r.id = rl.resource_id
       JOIN environment e ON e.id = rl.environment_id
       LEFT JOIN release_target_state s ON s.resource_id = rl.resource_id AND s.environment_id = rl.environment_id
                                       AND s.deployment_id = rl.deployment_id
      WHERE rl.id = ANY(?::uuid[])`,
    [uuidArray(releaseIds)],
  );
  return shipDigests(em, box, rows);
}

const bindingOf = (scope: string, covered: boolean): ApprovalFact['binding'] =>
  covered
    ? 'covered'
    : scope === 'recorded'
      ? 'otherConfiguration'
      : scope === 'pending'
        ? 'pending'
        : 'unbound';

/**
 * Pending releases' facts with what each would ship now, where it has approvals, and whether each
 * approval covers that (its scope holds the digest: engine/executor/approvalScopes.ts). Read-only,
 * and set-based: a release's activity, explain and the fan-out's batches call it alike.
 */
export async function withShipDigests(
  em: EntityManager,
  box: SecretBox,
  loaded: readonly LoadedRelease[],
): Promise<LoadedRelease[]> {
  const approved = loaded.filter(({ facts }) =>
    facts.approvals.some((approval) => approval.status === 'approved'),
  );
  if (approved.length === 0) return [...loaded];
  const digests = await releaseShipDigests(
    em,
    box,
    approved.map((release) => release.releaseId),
  );
  const known = approved.filter((release) => digests.has(release.releaseId));
  const scopes = await em.execute<{ release_id: string; user_id: string; scope: string; covered: boolean }[]>(
    `SELECT k.release_id, a.user_id, a.scope,
            EXISTS (SELECT 1 FROM approval_scope s WHERE s.approval_id = a.id AND s.digest = k.digest) AS covered
       FROM unnest(?::uuid[], ?::uuid[], ?::uuid[], ?::text[]) AS k(release_id, version_id, environment_id, digest)
       JOIN approval a ON a.version_id = k.version_id AND a.environment_id = k.environment_id AND a.status = 'approved'`,
    [
      uuidArray(known.map((release) => release.releaseId)),
      uuidArray(known.map((release) => release.facts.version.id)),
      uuidArray(known.map((release) => release.facts.release.environmentId)),
      `{${known.map((release) => digests.get(release.releaseId)).join(',')}}`,
    ],
  );
  const bindings = new Map(
    scopes.map((row) => [`${row.release_id}/${row.user_id}`, bindingOf(row.scope, row.covered)]),
  );
  return loaded.map((release) => {
    const shipDigest = digests.get(release.releaseId);
    if (!shipDigest) return release;
    const approvals = release.facts.approvals.map((approval) => {
      const binding =
        approval.status === 'approved' ? bindings.get(`${release.releaseId}/${approval.userId}`) : undefined;
      return binding ? { ...approval, binding } : approval;
    });
    return { ...release, facts: { ...release.facts, approvals, shipDigest } };
  });
}

/** One release's facts with what it would ship, as `withShipDigests`. */
export async function withShipDigest(
  em: EntityManager,
  box: SecretBox,
  loaded: LoadedRelease,
): Promise<LoadedRelease> {
  return (await withShipDigests(em, box, [loaded]))[0]!;
}

/** Each target's would-be release in a batch of `approvalScopeDigests`. */
const SCOPE_BATCH = 500;

/**
 * The digests of what every release target of a version's deployment in an environment would ship
 * now: an approval's scope (engine/executor/approvalScopes.ts), in batches of targets.
 */
export async function targetShipDigests(
  em: EntityManager,
  box: SecretBox,
  scope: { workspaceId: string; deploymentId: string; environmentId: string; versionId: string },
): Promise<Set<string>> {
  const targets = await em.execute<(PlanTargetRow & { resource_identifier: string })[]>(
    `SELECT t.resource_id, t.environment_id, r.name AS resource_name, r.identifier AS resource_identifier,
            e.name AS environment_name, s.current_release_id
       FROM release_target t
       JOIN resource r ON r.id = t.resource_id
       JOIN environment e ON e.id = t.environment_id
       LEFT JOIN release_target_state s ON s.resource_id = t.resource_id AND s.environment_id = t.environment_id
                                       AND s.deployment_id = t.deployment_id
      WHERE t.deployment_id = ? AND t.environment_id = ?
      ORDER BY t.resource_id`,
    [scope.deploymentId, scope.environmentId],
  );
  const digests = new Set<string>();
  const createdAt = new Date().toISOString();
  for (let start = 0; start < targets.length; start += SCOPE_BATCH) {
    const rows: ShipDigestRow[] = targets.slice(start, start + SCOPE_BATCH).map((target) => ({
      ...target,
      // The release context's id is left out of the digest; the plan only needs one per row.
      id: newId(),
      workspace_id: scope.workspaceId,
      deployment_id: scope.deploymentId,
      version_id: scope.versionId,
      phase: 'pending',
      created_at: createdAt,
    }));
    for (const digest of (await shipDigests(em, box, rows)).values()) digests.add(digest);
  }
  return digests;
}
