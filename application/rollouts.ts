import type { EntityManager } from '@mikro-orm/postgresql';
import type { AuditOrigin } from '../db/audit';
import { DeploymentVersionSchema } from '../db/entities';
import { enqueueOrchestrations } from '../db/outbox';
import { releaseWakeMessages } from '../db/releaseWake';
import { actorOf } from '../domain/audit';
import { ConflictError, ForbiddenError, NotFoundError } from '../domain/errors';
import type { Principal } from '../domain/principal';
import { waveCapacity, waveNames, type RolloutState, type WavesSpec } from '../domain/rollouts';
import { finishRelease, rollBackRollout, rolloutWake } from '../engine/executor';
import { cancelOpenJobs } from '../engine/jobMoves';
import { uuidArray } from '../db/sql';
import { findOwned } from './common';

/** How a target of a rollout stands, as the rollout's view counts them. */
export const ROLLOUT_TARGET_STATES = [
  'waiting',
  'admitted',
  'queued',
  'running',
  'succeeded',
  'failed',
  'cancelled',
] as const;
export type RolloutTargetState = (typeof ROLLOUT_TARGET_STATES)[number];

export interface RolloutWaveView {
  name: string;
  /** At most how many of its targets have an active job at once. */
  maxParallel: number;
  bakeSeconds: number;
  targets: Record<RolloutTargetState, number>;
}

/** A version's rollout under one waves rule, as GET .../rollout answers it. */
export interface RolloutView {
  id: string;
  policyId: string;
  ruleId: string;
  state: RolloutState;
  /** The wave the rollout is at (0-based; the last is the rest, the targets no wave matches). */
  currentWave: number;
  /** Why its targets wait, or what it does next. */
  reason: string;
  bakeUntil: string | null;
  halt: { reason: string; at: string } | null;
  /** The wave waiting for a person's judgement, and since when. */
  awaitingJudgement: { wave: number; since: string } | null;
  /** The judgements given, oldest first. */
  judgements: {
    wave: number;
    decision: string;
    reason: string;
    by: { id: string; name: string };
    at: string;
  }[];
  waves: RolloutWaveView[];
  createdAt: string;
  updatedAt: string;
}

/** What an operator does to a rollout. */
export type RolloutControl = 'pause' | 'resume' | 'abort';

/** The states each control applies in, and the state it leaves. */
const CONTROLS: Record<RolloutControl, { from: RolloutState[]; to: RolloutState }> = {
  pause: { from: ['running'], to: 'paused' },
  resume: { from: ['paused', 'halted'], to: 'running' },
  abort: { from: ['running', 'paused', 'halted'], to: 'aborted' },
};

/**
 * SQL: what a resume sets besides the state: the halt cleared, and the failures and runs so far as
 * the baseline a next halt counts from.
 */
const RESUMED = `, halt_reason = NULL, resumed_at = now(),
       (baseline_failed, baseline_ran) = (
         SELECT count(*) FILTER (WHERE r.phase = 'failed'), count(*) FILTER (WHERE r.phase IN ('succeeded', 'failed'))
           FROM rollout_member m JOIN release r ON r.id = m.release_id WHERE m.rollout_id = o.id)`;

/** SQL: the waves rule of rollout `o`, as its policy holds it now. */
const RULE_OF_ROLLOUT = `(SELECT rule->'waves' FROM policy p, jsonb_array_elements(p.rules) rule
                           WHERE p.id = o.policy_id AND rule->>'id' = o.rule_id::text)`;

interface RolloutRow {
  id: string;
  workspace_id: string;
  policy_id: string;
  rule_id: string;
  state: RolloutState;
  current_wave: number;
  reason: string;
  bake_until: Date | null;
  halt_reason: string | null;
  halted_at: Date | null;
  judgement_wave: number | null;
  judgement_since: Date | null;
  judgements: RolloutView['judgements'];
  created_at: Date;
  updated_at: Date;
  waves: WavesSpec | null;
}

/**
 * A version's rollouts in waves (docs/behaviour.md "Rolling out to a fleet"): read with each wave's
 * targets by state, and paused, resumed or aborted by an operator. A control changes the rollout's
 * state and wakes its workflow, which advances it as it now stands; resuming after a halt counts
 * only the failures that come after it.
 */
export class RolloutStore {
  constructor(
    private readonly em: EntityManager,
    private readonly origin: AuditOrigin,
  ) {}

  async forVersion(workspaceId: string, deploymentId: string, versionId: string): Promise<RolloutView[]> {
    await this.ownedVersion(this.em, workspaceId, deploymentId, versionId);
    return this.views(this.em, versionId);
  }

  control(
    workspaceId: string,
    deploymentId: string,
    versionId: string,
    control: RolloutControl,
    reason: string,
  ): Promise<RolloutView[]> {
    return this.em.transactional(async (em) => {
      await this.ownedVersion(em, workspaceId, deploymentId, versionId);
      const { from, to } = CONTROLS[control];
      const rollouts = await em.execute<{ id: string; workspace_id: string; state: RolloutState }[]>(
        `SELECT id, workspace_id, state FROM rollout WHERE version_id = ? ORDER BY created_at, id FOR UPDATE`,
        [versionId],
      );
      if (rollouts.length === 0) throw new NotFoundError('rollout of version', versionId);
      const applicable = rollouts.filter((rollout) => from.includes(rollout.state));
      if (applicable.length === 0) {
        throw new ConflictError(
          `The rollout is ${[...new Set(rollouts.map((r) => r.state))].join(' and ')}: ${control} applies to a rollout that is ${from.join(' or ')}`,
          'rollout_state',
        );
      }
      const ids = applicable.map((rollout) => rollout.id);
      const who = this.origin.actor.name;
      await em.execute(
        `UPDATE rollout o SET state = ?, reason = ?, updated_at = now()${to === 'running' ? RESUMED : ''}
          WHERE o.id = ANY(?::uuid[])`,
        [to, `${to} by ${who}: ${reason}`, uuidArray(ids)],
      );
      if (control === 'abort') await this.stopQueued(em, ids, reason);
      await enqueueOrchestrations(
        em,
        applicable.map((rollout) => rolloutWake(rollout.workspace_id, rollout.id)),
      );
      if (control === 'abort') await this.wakeWaiting(em, ids);
      return this.views(em, versionId);
    });
  }

  /**
   * A person's judgement on the wave a rollout waits at (`manualJudgement`): `continue` lets the
   * wave start; `rollback` aborts the rollout and rolls the targets it took back. Only the keys the
   * wave names may judge it, when it names any. 409 when no wave waits for one.
   */
  judge(
    workspaceId: string,
    deploymentId: string,
    versionId: string,
    principal: Principal,
    judgement: { decision: 'continue' | 'rollback'; reason: string },
  ): Promise<RolloutView[]> {
    return this.em.transactional(async (em) => {
      await this.ownedVersion(em, workspaceId, deploymentId, versionId);
      const [rollout] = await em.execute<(RolloutRow & { judgement_wave: number })[]>(
        `SELECT o.*, ${RULE_OF_ROLLOUT} AS waves FROM rollout o
          WHERE o.version_id = ? AND o.judgement_wave IS NOT NULL AND o.state = 'running'
          ORDER BY o.created_at, o.id LIMIT 1 FOR UPDATE OF o`,
        [versionId],
      );
      if (!rollout)
        throw new ConflictError(
          'No wave of this version’s rollout waits for a judgement',
          'no_judgement_pending',
        );
      const wave = rollout.judgement_wave;
      const approvers = rollout.waves?.waves[wave]?.manualJudgement?.approvers;
      const actor = actorOf(principal);
      if (approvers && !approvers.includes(actor.id) && !approvers.includes(actor.name)) {
        throw new ForbiddenError(
          `Wave ${rollout.waves!.waves[wave]!.name} takes a judgement from ${approvers.join(', ')} only`,
          'not_an_approver',
        );
      }
      const record = {
        wave,
        ...judgement,
        by: { id: actor.id, name: actor.name },
        at: new Date().toISOString(),
      };
      const continues = judgement.decision === 'continue';
      await em.execute(
        `UPDATE rollout SET judgements = judgements || jsonb_build_array(?::jsonb),
                judged_waves = CASE WHEN ? THEN array_append(judged_waves, ?::int) ELSE judged_waves END,
                state = CASE WHEN ? THEN state ELSE 'aborted' END,
                reason = ?, judgement_wave = NULL, judgement_since = NULL, updated_at = now()
          WHERE id = ?`,
        [
          JSON.stringify(record),
          continues,
          wave,
          continues,
          `${judgement.decision} by ${actor.name}: ${judgement.reason}`,
          rollout.id,
        ],
      );
      if (!continues) {
        await rollBackRollout(em, rollout.id, `${actor.name} judged: ${judgement.reason}`);
        await this.stopQueued(em, [rollout.id], judgement.reason);
        await this.wakeWaiting(em, [rollout.id]);
      }
      await enqueueOrchestrations(em, [rolloutWake(workspaceId, rollout.id)]);
      return this.views(em, versionId);
    });
  }

  /** An aborted rollout's releases whose jobs are only queued end `cancelled`: no agent has begun them. */
  private async stopQueued(em: EntityManager, rolloutIds: string[], reason: string): Promise<void> {
    const queued = await em.execute<{ id: string }[]>(
      `SELECT r.id FROM rollout_member m JOIN release r ON r.id = m.release_id
        WHERE m.rollout_id = ANY(?::uuid[]) AND r.phase = 'running'
          AND NOT EXISTS (SELECT 1 FROM job j WHERE j.release_id = r.id AND j.status NOT IN ('queued')
                            AND j.completed_at IS NULL)
        ORDER BY r.id`,
      [uuidArray(rolloutIds)],
    );
    for (const release of queued) {
      await cancelOpenJobs(em, { releaseId: release.id }, 'rollout aborted', this.origin);
      await finishRelease(em, release.id, 'cancelled', `the rollout was aborted: ${reason}`);
    }
  }

  /** The releases the aborted rollout had not admitted: woken, each finds itself blocked. */
  private async wakeWaiting(em: EntityManager, rolloutIds: string[]): Promise<void> {
    const waiting = await em.execute<{ release_id: string }[]>(
      `SELECT release_id FROM rollout_member WHERE rollout_id = ANY(?::uuid[]) AND admitted_at IS NULL`,
      [uuidArray(rolloutIds)],
    );
    await enqueueOrchestrations(em, releaseWakeMessages(waiting.map((row) => row.release_id)));
  }

  private async ownedVersion(
    em: EntityManager,
    workspaceId: string,
    deploymentId: string,
    versionId: string,
  ): Promise<void> {
    const version = await findOwned(
      em,
      DeploymentVersionSchema,
      workspaceId,
      versionId,
      'deployment version',
    );
    if (version.deploymentId !== deploymentId) throw new NotFoundError('deployment version', versionId);
  }

  private async views(em: EntityManager, versionId: string): Promise<RolloutView[]> {
    const rollouts = await em.execute<RolloutRow[]>(
      `SELECT o.*, ${RULE_OF_ROLLOUT} AS waves FROM rollout o WHERE o.version_id = ? ORDER BY o.created_at, o.id`,
      [versionId],
    );
    if (rollouts.length === 0) return [];
    const counts = await em.execute<
      { rollout_id: string; wave: number; state: RolloutTargetState; n: number }[]
    >(
      `SELECT m.rollout_id, m.wave, s.state, count(*)::int AS n
         FROM rollout_member m JOIN release r ON r.id = m.release_id
        CROSS JOIN LATERAL (SELECT CASE
                 WHEN r.phase IN ('succeeded', 'failed') THEN r.phase
                 WHEN r.phase IN ('cancelled', 'superseded') THEN 'cancelled'
                 WHEN m.admitted_at IS NULL THEN 'waiting'
                 WHEN r.phase = 'pending' THEN 'admitted'
                 WHEN EXISTS (SELECT 1 FROM job j WHERE j.release_id = r.id AND j.status = 'queued') THEN 'queued'
                 ELSE 'running' END AS state) s
        WHERE m.rollout_id = ANY(?::uuid[])
        GROUP BY m.rollout_id, m.wave, s.state`,
      [uuidArray(rollouts.map((rollout) => rollout.id))],
    );
    return rollouts.map((rollout) => toView(rollout, counts));
  }
}

function toView(
  rollout: RolloutRow,
  counts: readonly { rollout_id: string; wave: number; state: RolloutTargetState; n: number }[],
): RolloutView {
  const rule: WavesSpec = rollout.waves ?? { waves: [] };
  const iso = (value: Date | null) => (value ? new Date(value).toISOString() : null);
  return {
    id: rollout.id,
    policyId: rollout.policy_id,
    ruleId: rollout.rule_id,
    state: rollout.state,
    currentWave: rollout.current_wave,
    reason: rollout.reason,
    bakeUntil: iso(rollout.bake_until),
    halt:
      rollout.halt_reason && rollout.halted_at
        ? { reason: rollout.halt_reason, at: iso(rollout.halted_at)! }
        : null,
    awaitingJudgement:
      rollout.judgement_wave !== null && rollout.judgement_since
        ? { wave: rollout.judgement_wave, since: iso(rollout.judgement_since)! }
        : null,
    judgements: rollout.judgements,
    waves: waveNames(rule).map((name, wave) => {
      const targets = Object.fromEntries(ROLLOUT_TARGET_STATES.map((state) => [state, 0])) as Record<
        RolloutTargetState,
        number
      >;
      for (const row of counts) {
        if (row.rollout_id === rollout.id && row.wave === wave) targets[row.state] += row.n;
      }
      const total = Object.values(targets).reduce((sum, n) => sum + n, 0);
      return {
        name,
        maxParallel: waveCapacity(rule, wave, total),
        bakeSeconds: rule.waves[wave]?.bakeSeconds ?? 0,
        targets,
      };
    }),
    createdAt: new Date(rollout.created_at).toISOString(),
    updatedAt: new Date(rollout.updated_at).toISOString(),
  };
}
