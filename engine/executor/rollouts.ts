import type { EntityManager } from '@mikro-orm/postgresql';
import { releaseWakeMessages } from '../../db/releaseWake';
import { enqueueOrchestrations } from '../../db/outbox';
import { recordAuditEvents } from '../../db/audit';
import { uuidArray } from '../../db/sql';
import type { RolloutAdvance } from '../../domain/activityResults';
import { releaseEvent } from '../../domain/audit';
import { releaseOfRow, type OrchestrationMessage, type ReleaseIdentityRow } from '../../domain/orchestration';
import { requestRedeploy } from './releaseRedeploy';
import { startReleases } from './releaseStarts';
import type { SecretBox } from '../../db/secrets';
import { RELEASE_ROW_COLUMNS, type ReleaseRow } from '../planner/releaseRows';
import type { PolicyRule } from '../../domain/policies';
import {
  planRollout,
  waveOfTarget,
  type RolloutPlan,
  type RolloutState,
  type WaveCounts,
  type WavesSpec,
} from '../../domain/rollouts';
import { selectorMatches } from '../../domain/selectors';
import { targetContext, type TargetRecords } from '../eligibility/policyMatching';

/**
 * Rollouts in waves (docs/behaviour.md "Rolling out to a fleet"), set-based: the fan-out makes each
 * new release under a waves rule a member of its version's rollout, in its target's wave; the
 * rollout's workflow (workflows/rolloutWaves.ts) calls `advanceRollout`, which reads every wave's
 * counts in one statement, plans (domain/rollouts.ts) and admits the next targets in one more. A
 * release that ends wakes its rollout; the admitted releases are woken to start their jobs.
 */

/** A release the fan-out created, on a target whose policies' rules it knows. */
export interface RolloutCandidate {
  releaseId: string;
  workspaceId: string;
  versionId: string;
  target: TargetRecords;
  policies: readonly { id: string; rules: readonly PolicyRule[] }[];
}

/** The message that wakes a rollout's workflow (and starts it, the first time). */
export const rolloutWake = (workspaceId: string, rolloutId: string): OrchestrationMessage => ({
  kind: 'rollout.wake',
  workspaceId,
  rolloutId,
});

/**
 * The new releases under a waves rule joined to their version's rollout of it (created with the
 * first of them), each in the wave its target belongs to; the rollouts they joined are woken (a
 * completed one runs again for a target that appeared later). In the fan-out's transaction, before
 * the releases' gates are decided, so they wait to be admitted.
 */
export async function joinRollouts(
  tx: EntityManager,
  box: SecretBox,
  candidates: readonly RolloutCandidate[],
): Promise<void> {
  const members = candidates.flatMap((candidate) => {
    const context = targetContext(candidate.target);
    return candidate.policies.flatMap((policy) =>
      policy.rules.flatMap((rule) =>
        rule.waves
          ? [
              {
                ...candidate,
                policyId: policy.id,
                ruleId: rule.id,
                wave: waveOfTarget(rule.waves, (selector) => selectorMatches('target', selector, context)),
              },
            ]
          : [],
      ),
    );
  });
  if (members.length === 0) return;
  const column = (pick: (member: (typeof members)[number]) => string) => uuidArray(members.map(pick));
  const joined = await tx.execute<{ id: string; workspace_id: string }[]>(
    `WITH m AS (
       SELECT * FROM unnest(?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[], ?::uuid[], ?::int[])
         AS m(workspace_id, version_id, policy_id, rule_id, release_id, wave)
     ), created AS (
       INSERT INTO rollout (id, workspace_id, version_id, policy_id, rule_id)
       SELECT DISTINCT ON (version_id, rule_id) gen_random_uuid(), workspace_id, version_id, policy_id, rule_id FROM m
       ON CONFLICT (version_id, rule_id) DO NOTHING
       RETURNING id, workspace_id, version_id, rule_id
     ), rollouts AS (
       SELECT id, workspace_id, version_id, rule_id FROM created
       UNION ALL
       SELECT r.id, r.workspace_id, r.version_id, r.rule_id FROM rollout r
        WHERE (r.version_id, r.rule_id) IN (SELECT version_id, rule_id FROM m)
     ), inserted AS (
       INSERT INTO rollout_member (rollout_id, release_id, wave)
       SELECT DISTINCT ON (o.id, m.release_id) o.id, m.release_id, m.wave
         FROM m JOIN rollouts o ON o.version_id = m.version_id AND o.rule_id = m.rule_id
       ON CONFLICT DO NOTHING
       RETURNING rollout_id
     ), reopened AS (
       UPDATE rollout SET state = 'running', updated_at = now()
        WHERE id IN (SELECT rollout_id FROM inserted) AND state = 'completed'
     )
     SELECT DISTINCT o.id, o.workspace_id FROM rollouts o JOIN inserted i ON i.rollout_id = o.id`,
    [
      column((m) => m.workspaceId),
      column((m) => m.versionId),
      column((m) => m.policyId),
      column((m) => m.ruleId),
      column((m) => m.releaseId),
      `{${members.map((m) => m.wave).join(',')}}`,
    ],
  );
  await enqueueOrchestrations(
    tx,
    joined.map((rollout) => rolloutWake(rollout.workspace_id, rollout.id)),
  );
  // The rollouts admit what they may at once, so the first wave's releases pass their gates and get
  // their jobs in this transaction, as releases without waves do. A rollout another batch holds
  // right now is left to its workflow: batches side by side never wait on each other.
  for (const rollout of joined) await advanceRollout(tx, box, rollout.id, { skipLocked: true });
}

/** The rollouts a release is a member of, woken (its end may let the next targets through). */
export function wakeRolloutsOf(tx: EntityManager, releaseId: string): Promise<void> {
  return wakeOpenRollouts(
    tx,
    `SELECT o.id, o.workspace_id FROM rollout_member m JOIN rollout o ON o.id = m.rollout_id WHERE m.release_id = ?`,
    releaseId,
  );
}

/** A version's rollouts, woken: its fan-out completed, so their waves may end. */
export function wakeRolloutsOfVersion(tx: EntityManager, versionId: string): Promise<void> {
  return wakeOpenRollouts(tx, `SELECT o.id, o.workspace_id FROM rollout o WHERE o.version_id = ?`, versionId);
}

/** The rollouts `select` (of rollout `o`) finds, woken unless they are over. */
async function wakeOpenRollouts(tx: EntityManager, select: string, id: string): Promise<void> {
  const rollouts = await tx.execute<{ id: string; workspace_id: string }[]>(
    `${select} AND o.state NOT IN ('completed', 'aborted')`,
    [id],
  );
  await enqueueOrchestrations(
    tx,
    rollouts.map((rollout) => rolloutWake(rollout.workspace_id, rollout.id)),
  );
}

interface RolloutRow {
  id: string;
  workspace_id: string;
  version_id: string;
  rule_id: string;
  state: RolloutState;
  baseline_failed: number;
  baseline_ran: number;
  resumed_at: Date | null;
  judged_waves: number[];
  judgement_since: Date | null;
  fanout_complete: boolean;
  waves: WavesSpec | null;
}

/** A rollout, locked, with its rule as its policy holds it now (none when the rule is gone). */
const LOCK_ROLLOUT = `SELECT o.id, o.workspace_id, o.version_id, o.rule_id, o.state, o.baseline_failed, o.baseline_ran,
         o.resumed_at, o.judged_waves, o.judgement_since, v.rollout_completed_at IS NOT NULL AS fanout_complete,
         (SELECT rule->'waves' FROM policy p, jsonb_array_elements(p.rules) rule
           WHERE p.id = o.policy_id AND p.enabled AND rule->>'id' = o.rule_id::text) AS waves
    FROM rollout o JOIN deployment_version v ON v.id = o.version_id
   WHERE o.id = ? FOR UPDATE OF o`;

/** Each wave's counts, and the failures in a row since the rollout last resumed. */
const WAVE_COUNTS = `SELECT m.wave, count(*)::int AS total,
         count(m.admitted_at)::int AS admitted,
         count(*) FILTER (WHERE m.admitted_at IS NOT NULL AND r.phase IN ('pending', 'running'))::int AS active,
         count(*) FILTER (WHERE r.phase = 'succeeded')::int AS succeeded,
         count(*) FILTER (WHERE r.phase = 'failed')::int AS failed,
         count(*) FILTER (WHERE r.phase NOT IN ('pending', 'running'))::int AS ended,
         max(r.completed_at) AS last_ended_at
    FROM rollout_member m JOIN release r ON r.id = m.release_id
   WHERE m.rollout_id = ? GROUP BY m.wave`;

const TRAILING_FAILURES = `WITH ended AS (
     SELECT r.phase, r.completed_at FROM rollout_member m JOIN release r ON r.id = m.release_id
      WHERE m.rollout_id = ? AND r.phase IN ('succeeded', 'failed')
        AND r.completed_at > coalesce(?::timestamptz, '-infinity'))
   SELECT count(*)::int AS n FROM ended
    WHERE phase = 'failed'
      AND completed_at > coalesce((SELECT max(completed_at) FROM ended WHERE phase = 'succeeded'), '-infinity')`;

/** The next targets of a wave, in the order their releases were created, let through. */
const ADMIT = `UPDATE rollout_member m SET admitted_at = now()
    FROM (SELECT m.release_id FROM rollout_member m JOIN release r ON r.id = m.release_id
           WHERE m.rollout_id = ? AND m.wave = ? AND m.admitted_at IS NULL
           ORDER BY r.created_at, r.id LIMIT ?) next
   WHERE m.rollout_id = ? AND m.release_id = next.release_id
   RETURNING m.release_id`;

/**
 * One step of a rollout, in one transaction: its counts read, its plan made, and the plan applied —
 * a halt recorded (and audited), the next targets admitted and their releases woken, the rollout's
 * wave and reason kept for explain and the board. With `skipLocked`, a rollout another transaction
 * holds is left as it is.
 */
export async function advanceRollout(
  tx: EntityManager,
  box: SecretBox,
  rolloutId: string,
  options: { skipLocked?: boolean } = {},
): Promise<RolloutAdvance> {
  const [rollout] = await tx.execute<RolloutRow[]>(
    options.skipLocked ? `${LOCK_ROLLOUT} SKIP LOCKED` : LOCK_ROLLOUT,
    [rolloutId],
  );
  if (!rollout) return { done: !options.skipLocked };
  if (rollout.state === 'completed' || rollout.state === 'aborted') return { done: true };
  if (!rollout.waves) return admitEveryone(tx, rollout);
  const waves = await waveCounts(tx, rollout.id, rollout.waves.waves.length + 1);
  const [{ n: trailingFailures }] = (await tx.execute<{ n: number }[]>(TRAILING_FAILURES, [
    rollout.id,
    rollout.resumed_at,
  ])) as [{ n: number }];
  const plan = planRollout(
    rollout.waves,
    waves,
    {
      state: rollout.state,
      fanoutComplete: rollout.fanout_complete,
      trailingFailures,
      baseline: { failed: rollout.baseline_failed, ran: rollout.baseline_ran },
      judged: rollout.judged_waves,
      judgementSince: rollout.judgement_since ? new Date(rollout.judgement_since).toISOString() : null,
    },
    new Date(),
  );
  if (plan.halt) await haltRollout(tx, rollout, plan);
  if (plan.halt && rollout.waves.onHalt === 'rollback') await rollBackRollout(tx, rollout.id, plan.halt);
  if (plan.admit > 0) {
    const admitted = await tx.execute<{ release_id: string }[]>(ADMIT, [
      rollout.id,
      plan.wave,
      plan.admit,
      rollout.id,
    ]);
    await startOrWake(
      tx,
      box,
      admitted.map((row) => row.release_id),
    );
  }
  await tx.execute(
    `UPDATE rollout SET current_wave = ?, reason = ?, bake_until = ?,
            state = CASE WHEN ? THEN 'completed' ELSE state END,
            judgement_wave = ?::int,
            judgement_since = CASE WHEN ?::int IS NULL THEN NULL ELSE coalesce(judgement_since, now()) END,
            updated_at = now()
      WHERE id = ?`,
    [
      plan.wave,
      plan.reason,
      plan.awaitingJudgement === undefined ? (plan.nextChangeAt ?? null) : null,
      plan.done,
      plan.awaitingJudgement ?? null,
      plan.awaitingJudgement ?? null,
      rollout.id,
    ],
  );
  return { done: plan.done, ...(plan.nextChangeAt ? { nextChangeAt: plan.nextChangeAt } : {}) };
}

/**
 * Admitted releases start their jobs: those whose workflows have not started yet (their starts still
 * wait in the outbox behind the fan-out's others) are started here as the fan-out starts releases
 * (./releaseStarts.ts: gates decided, jobs written, the start enqueued with its admission) in place
 * of their waiting start; the others are woken. A start the relay holds right now is left to it,
 * and its release woken.
 */
async function startOrWake(tx: EntityManager, box: SecretBox, releaseIds: readonly string[]): Promise<void> {
  if (releaseIds.length === 0) return;
  const unstarted = await tx.execute<ReleaseRow[]>(
    `WITH taken AS (
       DELETE FROM outbox WHERE id IN (
         SELECT id FROM outbox
          WHERE kind = 'release.start' AND (payload->'release'->>'id')::uuid = ANY(?::uuid[])
            AND payload->'admitted' IS NULL
            FOR UPDATE SKIP LOCKED)
       RETURNING (payload->'release'->>'id')::uuid AS id)
     SELECT ${RELEASE_ROW_COLUMNS} FROM release WHERE id IN (SELECT id FROM taken) ORDER BY id`,
    [uuidArray(releaseIds)],
  );
  await startReleases(tx, box, unstarted, { created: false });
  const starting = new Set(unstarted.map((release) => release.id));
  // Their new starts take a fair share of their own (worker/outboxRelay.ts takes starts in fair shares
  // by `fairness_key`): a release that holds a slot of its wave goes out beside the fan-out's backlog
  // of waiting members, not behind it.
  if (starting.size > 0) {
    await tx.execute(
      `UPDATE outbox SET fairness_key = fairness_key || '/admitted'
        WHERE kind = 'release.start' AND (payload->'release'->>'id')::uuid = ANY(?::uuid[])`,
      [uuidArray([...starting])],
    );
  }
  await enqueueOrchestrations(tx, releaseWakeMessages(releaseIds.filter((id) => !starting.has(id))));
}

/** Each wave's counts, `count` of them (a wave without members counts nothing). */
async function waveCounts(tx: EntityManager, rolloutId: string, count: number): Promise<WaveCounts[]> {
  const rows = await tx.execute<
    (Omit<WaveCounts, 'lastEndedAt'> & { wave: number; last_ended_at: Date | null })[]
  >(WAVE_COUNTS, [rolloutId]);
  return Array.from({ length: count }, (_, wave) => {
    const row = rows.find((counts) => counts.wave === wave);
    return {
      total: row?.total ?? 0,
      admitted: row?.admitted ?? 0,
      active: row?.active ?? 0,
      succeeded: row?.succeeded ?? 0,
      failed: row?.failed ?? 0,
      ended: row?.ended ?? 0,
      lastEndedAt: row?.last_ended_at ? new Date(row.last_ended_at).toISOString() : null,
    };
  });
}

/** The rollout stops by itself: its state and reason, and an audit event (which a webhook may carry). */
async function haltRollout(tx: EntityManager, rollout: RolloutRow, plan: RolloutPlan): Promise<void> {
  await tx.execute(
    `UPDATE rollout SET state = 'halted', halt_reason = ?, halted_at = now(), updated_at = now() WHERE id = ?`,
    [plan.halt, rollout.id],
  );
  const [version] = await tx.execute<{ deployment_id: string }[]>(
    `SELECT deployment_id FROM deployment_version WHERE id = ?`,
    [rollout.version_id],
  );
  await recordAuditEvents(tx, [
    {
      workspaceId: rollout.workspace_id,
      deploymentId: version?.deployment_id ?? null,
      action: 'rollout.halted',
      record: { type: 'rollout', id: rollout.id },
      details: { versionId: rollout.version_id, ruleId: rollout.rule_id, wave: plan.wave, reason: plan.halt },
    },
  ]);
}

/**
 * The targets a rollout took to its version, rolled back (a halt with `onHalt: rollback`, or a
 * judgement): each one's previous successful release runs again, marked as a rollback of the
 * rollout's release and past its policies, as the rollback rule does (./rollback.ts). A target
 * that had no earlier release keeps what it has.
 */
export async function rollBackRollout(tx: EntityManager, rolloutId: string, why: string): Promise<number> {
  const pairs = await tx.execute<(ReleaseIdentityRow & { previous_id: string; previous_tag: string })[]>(
    `SELECT r.id, r.workspace_id, r.deployment_id, r.environment_id, r.resource_id, r.version_id,
            p.id AS previous_id, pv.tag AS previous_tag
       FROM rollout_member m JOIN release r ON r.id = m.release_id
       CROSS JOIN LATERAL (
         SELECT e.id, e.version_id FROM release e
          WHERE e.resource_id = r.resource_id AND e.environment_id = r.environment_id
            AND e.deployment_id = r.deployment_id AND e.version_id <> r.version_id AND e.phase = 'succeeded'
          ORDER BY e.completed_at DESC LIMIT 1) p
       JOIN deployment_version pv ON pv.id = p.version_id
      WHERE m.rollout_id = ? AND m.admitted_at IS NOT NULL AND r.phase IN ('succeeded', 'failed', 'running')
      ORDER BY r.id`,
    [rolloutId],
  );
  const reason = `rollout rolled back: ${why}`;
  await recordAuditEvents(
    tx,
    pairs.map((pair) =>
      releaseEvent('release.rolled_back', releaseOfRow(pair), {
        toReleaseId: pair.previous_id,
        toVersion: pair.previous_tag,
        reason,
      }),
    ),
  );
  for (const pair of pairs) {
    await requestRedeploy(
      tx,
      pair.previous_id,
      { at: new Date().toISOString(), by: 'rollback', overrideReason: reason, rollbackOf: pair.id },
      reason,
    );
  }
  return pairs.length;
}

/** A rollout whose rule was removed (or its policy disabled) holds nothing back: its members are let through. */
async function admitEveryone(tx: EntityManager, rollout: RolloutRow): Promise<RolloutAdvance> {
  const admitted = await tx.execute<{ release_id: string }[]>(
    `UPDATE rollout_member SET admitted_at = now() WHERE rollout_id = ? AND admitted_at IS NULL RETURNING release_id`,
    [rollout.id],
  );
  await enqueueOrchestrations(tx, releaseWakeMessages(admitted.map((row) => row.release_id)));
  await tx.execute(
    `UPDATE rollout SET state = 'completed', reason = 'its waves rule was removed', updated_at = now() WHERE id = ?`,
    [rollout.id],
  );
  return { done: true };
}
