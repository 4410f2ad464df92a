import type { EntityManager } from '@mikro-orm/postgresql';
import { canEverDeploy } from '../../domain/eligibility';
import type { ReleaseTargetRef } from '../../domain/releaseTargets';
import type { VersionFields } from '../../domain/selectors';
import { RELEASE_ROW_COLUMNS, type ReleaseRow } from '../planner/releaseRows';
import { newId } from '../../db/ids';
import {
  enabledPolicies,
  policiesForTarget,
  type MatchedPolicy,
  type TargetRecords,
} from '../eligibility/policyMatching';
import { startReleases } from './releaseStarts';
import { joinRollouts, wakeRolloutsOfVersion, type RolloutCandidate } from './rollouts';
import { DEPLOYED_VERSION_JOIN } from '../eligibility/versionColumns';
import { OPEN_RELEASES_OF, wakeReleases } from '../../db/releaseWake';
import type { SecretBox } from '../../db/secrets';
import { uuidArray } from '../../db/sql';
import { versionFanout } from '../metrics';

/**
 * Creating releases (docs/behaviour.md "Flow", steps 1–4), set-based: one batch of release targets is one
 * transaction and a handful of statements, whatever its size. A version gets a release on a target
 * only when it can ever deploy there (domain/eligibility.ts). Each new release's gates are decided
 * at once by the same `evaluateGates` its workflow calls; for those that pass and get their
 * target's slot, the jobs are written in the same transaction (a pull agent's already queued), and
 * every new release's workflow start is enqueued with it. A release's workflow still owns its
 * lifecycle from there. Everything is idempotent: a batch run twice creates nothing twice.
 */

export interface FanoutResult {
  /** Releases created. */
  created: number;
  /** Of those, releases whose jobs were created with them. */
  started: number;
}

interface VersionRow extends VersionFields {
  created_at: Date | string;
  deployment_id: string;
  workspace_id: string;
}

interface TargetRow extends ReleaseTargetRef, TargetRecords {
  workspace_id: string;
  /** Creation time and id of the version deployed or deploying there, if any. */
  deployed_created_at: Date | string | null;
  deployed_version_id: string | null;
}

/**
 * The batch's targets with what eligibility reads of them, from `picked`: a subquery of release
 * target rows (`t`), chosen first so the joins below look up that batch alone (joined to the whole
 * tables in key order, each batch after a cursor would scan every row before it).
 */
const targetSelect = (picked: string) => `
  SELECT t.resource_id AS "resourceId", t.environment_id AS "environmentId", t.deployment_id AS "deploymentId",
         t.workspace_id,
         json_build_object('kind', r.kind, 'version', r.version, 'name', r.name, 'identifier', r.identifier,
                           'metadata', r.metadata, 'config', r.config) AS resource,
         json_build_object('id', e.id, 'name', e.name, 'metadata', e.metadata) AS environment,
         json_build_object('id', d.id, 'name', d.name, 'slug', d.slug, 'metadata', d.metadata) AS deployment,
         dv.created_at AS deployed_created_at, dv.id AS deployed_version_id
    FROM (${picked}) t
    JOIN resource r ON r.id = t.resource_id
    JOIN environment e ON e.id = t.environment_id
    JOIN deployment d ON d.id = t.deployment_id
    LEFT JOIN release_target_state s
      ON s.resource_id = t.resource_id AND s.environment_id = t.environment_id AND s.deployment_id = t.deployment_id
    ${DEPLOYED_VERSION_JOIN('s', 'dv')}`;

/**
 * Stored bytes of resource configuration and metadata that one batch reads at most (and at least one
 * target): a batch holds its targets' resources several times over while it runs (their rows, the
 * releases' facts, the jobs' plan inputs), so a workspace of very large resources gets smaller batches
 * rather than a worker out of memory (its heap is capped, worker/tuning.ts). Sizes are as stored
 * (`pg_column_size`, compressed), which costs nothing to read; ordinary resources, a kilobyte or two
 * each, fill batches of 500 well under it.
 */
export const BATCH_RESOURCE_BYTES = 1024 * 1024;
/** A resource `r`'s stored bytes; read by id per target (a join would scan the table in key order up to the batch). */
const RESOURCE_BYTES = 'coalesce(pg_column_size(r.config), 0) + coalesce(pg_column_size(r.metadata), 0)';

/**
 * How many of the next `size` targets in `where` fit in a batch's bytes (at least one), and whether
 * any target comes after them.
 */
async function targetsWithinBytes(
  tx: EntityManager,
  where: string,
  params: unknown[],
  size: number,
  bytes = BATCH_RESOURCE_BYTES,
): Promise<{ limit: number; more: boolean }> {
  const [row] = await tx.execute<{ fitting: number; candidates: number }[]>(
    `SELECT count(*) FILTER (WHERE n = 1 OR bytes <= ?)::int AS fitting, count(*)::int AS candidates
       FROM (SELECT row_number() OVER w AS n,
                    sum((SELECT ${RESOURCE_BYTES} FROM resource r WHERE r.id = t.resource_id)) OVER w AS bytes
               FROM release_target t
              WHERE ${where}
             WINDOW w AS (ORDER BY t.resource_id, t.environment_id)
              ORDER BY t.resource_id, t.environment_id
              LIMIT ?) batch`,
    [bytes, ...params, size],
  );
  const fitting = Math.max(1, row?.fitting ?? 0);
  const candidates = row?.candidates ?? 0;
  return { limit: fitting, more: fitting < candidates || candidates === size };
}

const iso = (value: Date | string) => new Date(value).toISOString();

/** A target with the policies that apply there. */
type TargetWithPolicies = TargetRow & { policies: MatchedPolicy[] };

/** The targets, each with the policies of the workspace's that apply there (matched once per target). */
function withPolicies(
  targets: readonly TargetRow[],
  policies: Awaited<ReturnType<typeof enabledPolicies>>,
): TargetWithPolicies[] {
  return targets.map((target) => ({ ...target, policies: policiesForTarget(policies, target) }));
}

/** A version on a target, in the terms of domain/eligibility.ts. */
function eligibleOn(version: VersionRow, target: TargetWithPolicies): boolean {
  return canEverDeploy(
    { ...version, createdAt: iso(version.created_at) },
    {
      ...target,
      deployed: target.deployed_version_id
        ? { id: target.deployed_version_id, createdAt: iso(target.deployed_created_at!) }
        : null,
      rules: target.policies.flatMap((policy) => policy.rules),
    },
  );
}

type ReleaseChoice = { target: TargetWithPolicies; versionId: string };

/**
 * Creates the chosen releases that do not exist yet, in the caller's transaction: members of their
 * rollouts in waves, started (./releaseStarts.ts: their gates decided, the jobs of those that may
 * proceed written, their workflows' starts enqueued), and the older open releases they supersede
 * woken.
 */
async function createReleases(
  tx: EntityManager,
  box: SecretBox,
  choices: readonly ReleaseChoice[],
): Promise<FanoutResult> {
  if (choices.length === 0) return { created: 0, started: 0 };
  const created = await insertReleases(tx, choices);
  await joinRollouts(tx, box, rolloutCandidates(choices, created));
  const started = await startReleases(tx, box, created, { created: true });
  await wakeSupersededReleases(tx, choices);
  return { created: created.length, started };
}

/** The new releases as candidates of rollouts in waves, with their targets' records and policies. */
function rolloutCandidates(
  choices: readonly ReleaseChoice[],
  created: readonly ReleaseRow[],
): RolloutCandidate[] {
  const key = (resourceId: string, environmentId: string, deploymentId: string) =>
    `${resourceId}/${environmentId}/${deploymentId}`;
  const chosen = new Map(
    choices.map((choice) => [
      key(choice.target.resourceId, choice.target.environmentId, choice.target.deploymentId),
      choice,
    ]),
  );
  return created.flatMap((release) => {
    const choice = chosen.get(key(release.resource_id, release.environment_id, release.deployment_id));
    return choice
      ? [
          {
            releaseId: release.id,
            workspaceId: release.workspace_id,
            versionId: release.version_id,
            target: choice.target,
            policies: choice.target.policies,
          },
        ]
      : [];
  });
}

/** The releases that did not exist yet, as inserted (a repeated choice inserts nothing). */
function insertReleases(tx: EntityManager, choices: readonly ReleaseChoice[]): Promise<ReleaseRow[]> {
  const column = (pick: (choice: ReleaseChoice) => string) => uuidArray(choices.map(pick));
  return tx.execute<ReleaseRow[]>(
    `INSERT INTO release (id, workspace_id, resource_id, environment_id, deployment_id, version_id)
     SELECT * FROM unnest(?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[])
     ON CONFLICT (resource_id, environment_id, deployment_id, version_id) DO NOTHING
     RETURNING ${RELEASE_ROW_COLUMNS}`,
    [
      uuidArray(choices.map(() => newId())),
      column((c) => c.target.workspace_id),
      column((c) => c.target.resourceId),
      column((c) => c.target.environmentId),
      column((c) => c.target.deploymentId),
      column((c) => c.versionId),
    ],
  );
}

/** Older open releases of these targets: woken, those still waiting find themselves superseded. */
async function wakeSupersededReleases(tx: EntityManager, choices: readonly ReleaseChoice[]): Promise<void> {
  const column = (pick: (choice: ReleaseChoice) => string) => uuidArray(choices.map(pick));
  const older = await tx.execute<{ id: string }[]>(
    `SELECT r.id
       FROM unnest(?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[]) AS c(resource_id, environment_id, deployment_id, version_id)
      CROSS JOIN LATERAL (${OPEN_RELEASES_OF('c')}) r
      WHERE r.version_id <> c.version_id`,
    [
      column((c) => c.target.resourceId),
      column((c) => c.target.environmentId),
      column((c) => c.target.deploymentId),
      column((c) => c.versionId),
    ],
  );
  await wakeReleases(
    tx,
    older.map((release) => release.id),
  );
}

/**
 * One batch of a version's rollout: the next `size` release targets of its deployment after `after`
 * (a `resourceId/environmentId` cursor) for each of `lanes` transactions, which run side by side on
 * consecutive slices of those targets, each with its share of the version's rollout progress. A
 * transaction alternates between this process's work and the database's, so two of them keep both
 * busy where one leaves each idle half the time. `next` is absent when the rollout is complete; it is
 * marked complete only once every slice has committed.
 */
export async function rollOutVersionBatch(
  fork: () => EntityManager,
  box: SecretBox,
  versionId: string,
  after: string | undefined,
  size: number,
  lanes = 1,
): Promise<FanoutResult & { next?: string }> {
  const em = fork();
  const version = await readyVersion(em, versionId);
  if (!version) return { created: 0, started: 0 };
  const [afterResource, afterEnvironment] = after ? after.split('/') : [];
  const where = `t.deployment_id = ? ${after ? 'AND (t.resource_id, t.environment_id) > (?::uuid, ?::uuid)' : ''}`;
  const params = after ? [version.deployment_id, afterResource, afterEnvironment] : [version.deployment_id];
  const { limit, more } = await targetsWithinBytes(
    em,
    where,
    params,
    size * lanes,
    BATCH_RESOURCE_BYTES * lanes,
  );
  const keys = await em.execute<TargetKey[]>(
    `SELECT t.resource_id AS "resourceId", t.environment_id AS "environmentId" FROM release_target t
      WHERE ${where} ORDER BY t.resource_id, t.environment_id LIMIT ?`,
    [...params, limit],
  );
  const slice = Math.ceil(keys.length / lanes);
  const slices = Array.from({ length: lanes }, (_, n) => keys.slice(n * slice, (n + 1) * slice)).filter(
    (targets) => targets.length > 0,
  );
  const results = await Promise.all(
    slices.map((targets) => rollOutVersionSlice(fork(), box, versionId, targets)),
  );
  const result = results.reduce(
    (sum, one) => ({ created: sum.created + one.created, started: sum.started + one.started }),
    {
      created: 0,
      started: 0,
    },
  );
  const last = keys[keys.length - 1];
  const next = more && last ? `${last.resourceId}/${last.environmentId}` : undefined;
  if (next) return { ...result, next };
  await completeRollout(em, versionId);
  return result;
}

type TargetKey = { resourceId: string; environmentId: string };

async function readyVersion(em: EntityManager, versionId: string): Promise<VersionRow | undefined> {
  const [version] = await em.execute<VersionRow[]>(
    `SELECT id, tag, name, status, metadata, config, created_at, deployment_id, workspace_id
       FROM deployment_version WHERE id = ?`,
    [versionId],
  );
  return version?.status === 'ready' ? version : undefined;
}

/** One transaction of a version's rollout: releases on these targets of its deployment, and the progress they make. */
function rollOutVersionSlice(
  em: EntityManager,
  box: SecretBox,
  versionId: string,
  keys: readonly TargetKey[],
): Promise<FanoutResult> {
  return em.transactional(async (tx) => {
    const version = await readyVersion(tx, versionId);
    if (!version) return { created: 0, started: 0 };
    // Each key looked up by the primary key (LIMIT 1 keeps the lookups from becoming one hash of every
    // target of the deployment, which stale statistics make the planner choose during a fan-out).
    const targets = await tx.execute<TargetRow[]>(
      `${targetSelect(`SELECT t.* FROM unnest(?::uuid[], ?::uuid[]) AS wanted(resource_id, environment_id)
        CROSS JOIN LATERAL (SELECT * FROM release_target x
                             WHERE x.resource_id = wanted.resource_id AND x.environment_id = wanted.environment_id
                               AND x.deployment_id = ? LIMIT 1) t`)}
        ORDER BY t.resource_id, t.environment_id`,
      [
        uuidArray(keys.map((k) => k.resourceId)),
        uuidArray(keys.map((k) => k.environmentId)),
        version.deployment_id,
      ],
    );
    const policies = await enabledPolicies(tx, version.workspace_id);
    const result = await createReleases(
      tx,
      box,
      withPolicies(targets, policies)
        .filter((target) => eligibleOn(version, target))
        .map((target) => ({ target, versionId })),
    );
    await tx.execute(
      `UPDATE deployment_version
          SET rollout_status = 'running',
              rollout_release_count = rollout_release_count + ?,
              rollout_started_at = coalesce(rollout_started_at, statement_timestamp()),
              rollout_batch_at = clock_timestamp(),
              rollout_completed_at = NULL
        WHERE id = ?`,
      [result.created, versionId],
    );
    return result;
  });
}

/** A version's rollout marked complete, once its last batch committed. */
async function completeRollout(em: EntityManager, versionId: string): Promise<void> {
  const progress = await em.transactional(async (tx) => {
    const [row] = await tx.execute<{ fanout_seconds: number | null }[]>(
      `UPDATE deployment_version
        SET rollout_status = 'completed',
            rollout_started_at = coalesce(rollout_started_at, statement_timestamp()),
            rollout_completed_at = coalesce(rollout_completed_at, clock_timestamp())
      WHERE id = ? AND status = 'ready'
      RETURNING extract(epoch FROM rollout_completed_at - rollout_started_at)::float8 AS fanout_seconds`,
      [versionId],
    );
    // Its rollouts in waves may now see a wave end: no target joins one any more.
    await wakeRolloutsOfVersion(tx, versionId);
    return row;
  });
  if (typeof progress?.fanout_seconds === 'number') versionFanout.observe(progress.fanout_seconds);
}

/**
 * One batch of a workspace's new release targets (flagged `rollout_pending` when they appeared):
 * each gets a release of the newest version that can deploy there, if any. `more` when the batch
 * was full and others may wait.
 */
export async function rollOutPendingTargets(
  em: EntityManager,
  box: SecretBox,
  workspaceId: string,
  size: number,
): Promise<FanoutResult & { more: boolean }> {
  return em.transactional(async (tx) => {
    // The oldest pending targets, as many as fit in a batch's bytes (BATCH_RESOURCE_BYTES).
    const picked = await tx.execute<(ReleaseTargetRef & { candidates: number })[]>(
      `WITH candidates AS (
         SELECT resource_id, environment_id, deployment_id, created_at FROM release_target
          WHERE workspace_id = ? AND rollout_pending
          ORDER BY created_at LIMIT ? FOR UPDATE SKIP LOCKED),
       sized AS (
         SELECT c.resource_id, c.environment_id, c.deployment_id, count(*) OVER () AS candidates,
                row_number() OVER w AS n,
                sum((SELECT ${RESOURCE_BYTES} FROM resource r WHERE r.id = c.resource_id)) OVER w AS bytes
           FROM candidates c
         WINDOW w AS (ORDER BY c.created_at, c.resource_id, c.environment_id, c.deployment_id))
       UPDATE release_target t SET rollout_pending = false
         FROM sized p
        WHERE (p.n = 1 OR p.bytes <= ?)
          AND t.resource_id = p.resource_id AND t.environment_id = p.environment_id AND t.deployment_id = p.deployment_id
        RETURNING t.resource_id AS "resourceId", t.environment_id AS "environmentId", t.deployment_id AS "deploymentId",
                  p.candidates::int AS candidates`,
      [workspaceId, size, BATCH_RESOURCE_BYTES],
    );
    if (picked.length === 0) return { created: 0, started: 0, more: false };
    const candidates = picked[0]!.candidates;
    const targets = await tx.execute<TargetRow[]>(
      targetSelect(`SELECT t.* FROM release_target t
         JOIN unnest(?::uuid[], ?::uuid[], ?::uuid[]) AS wanted(resource_id, environment_id, deployment_id)
           ON wanted.resource_id = t.resource_id AND wanted.environment_id = t.environment_id
          AND wanted.deployment_id = t.deployment_id`),
      [
        uuidArray(picked.map((t) => t.resourceId)),
        uuidArray(picked.map((t) => t.environmentId)),
        uuidArray(picked.map((t) => t.deploymentId)),
      ],
    );
    const versions = await tx.execute<VersionRow[]>(
      `SELECT id, tag, name, status, metadata, config, created_at, deployment_id, workspace_id FROM deployment_version
        WHERE deployment_id = ANY(?::uuid[]) AND status = 'ready' ORDER BY created_at DESC, id DESC`,
      [uuidArray([...new Set(targets.map((t) => t.deploymentId))])],
    );
    const policies = await enabledPolicies(tx, workspaceId);
    const choices = withPolicies(targets, policies).flatMap((target) => {
      const version = versions.find((v) => v.deployment_id === target.deploymentId && eligibleOn(v, target));
      return version ? [{ target, versionId: version.id }] : [];
    });
    return {
      ...(await createReleases(tx, box, choices)),
      more: candidates === size || picked.length < candidates,
    };
  });
}
