import type { EntityManager } from '@mikro-orm/postgresql';
import { holdState } from '../../domain/holds';
import { enqueueOrchestrations } from '../../db/outbox';
import { recordAuditEvents } from '../../db/audit';
import { releaseEvent } from '../../domain/audit';
import { newId } from '../../db/ids';
import { wakeReleases } from '../../db/releaseWake';
import { uuidArray } from '../../db/sql';
import { holdCovers, loadWorkspaceHolds, type StoredHold } from '../eligibility/holdMatching';
import {
  TARGET_RECORD_COLUMNS,
  TARGET_RECORD_JOINS,
  type TargetRecords,
} from '../eligibility/policyMatching';
import { paced } from '../selectors/pace';
import { requestRedeploy } from './releaseRedeploy';
import type { HoldApplied } from '../../domain/activityResults';

/**
 * What a hold does to the records it covers (docs/behaviour.md "Holds and freezes"), outside the
 * releases' own gates: the queued jobs it keeps from agents, the waiting releases it wakes, and a
 * pin's convergence. Run in the transaction that creates or deletes a hold, and by the hold's
 * workflow each time a freeze window opens or closes or the hold expires.
 */

type CoveredRow = TargetRecords & { workspace_id: string; deployment_id: string };

/** The rows whose target the hold covers, its selector evaluated in paced slices (engine/selectors/pace.ts). */
function covered<T extends CoveredRow>(hold: StoredHold, rows: readonly T[]): Promise<T[]> {
  return paced(hold.workspaceId, async (pacer) => {
    const kept: T[] = [];
    for (const row of rows) {
      await pacer.pace();
      if (holdCovers(hold, row)) kept.push(row);
    }
    return kept;
  });
}

/**
 * Brings everything the hold covers in line with its state now: the queued jobs it holds back
 * marked afresh, the waiting releases it covers woken, a pin's targets converging (in force) or
 * freed for the newest version (ended). A deleted hold has nothing left to do.
 */
export async function applyHold(
  tx: EntityManager,
  workspaceId: string,
  holdId: string,
): Promise<HoldApplied> {
  const [hold] = await loadWorkspaceHolds(tx, [workspaceId], [holdId]);
  if (!hold) return {};
  const state = holdState(hold, new Date());
  await tx.execute(`DELETE FROM job_hold WHERE hold_id = ?`, [hold.id]);
  if (state.inForce) await holdQueuedJobs(tx, hold);
  await wakeCoveredReleases(tx, hold);
  if (hold.effect === 'pin') await (state.inForce ? convergeToPin(tx, hold) : resumeAfterPin(tx, hold));
  return state.changesAt ? { nextChangeAt: state.changesAt.toISOString() } : {};
}

/** After a hold's row is deleted (its job marks with it): its releases look again, a pin's targets move on. */
export async function releaseHold(tx: EntityManager, hold: StoredHold): Promise<void> {
  await wakeCoveredReleases(tx, hold);
  if (hold.effect === 'pin') await resumeAfterPin(tx, hold);
}

/**
 * Marks the queued jobs the hold keeps from polls and claims: every one on a covered target (a
 * pin: of another version than its own), except those of a version a policy skip lets past it.
 */
async function holdQueuedJobs(tx: EntityManager, hold: StoredHold): Promise<void> {
  const queued = await tx.execute<(CoveredRow & { id: string })[]>(
    `SELECT j.id, j.workspace_id, j.deployment_id, ${TARGET_RECORD_COLUMNS}
       FROM job j
       JOIN release rl ON rl.id = j.release_id
       ${TARGET_RECORD_JOINS('j')}
      WHERE j.workspace_id = ? AND j.status = 'queued'
        AND (?::uuid IS NULL OR rl.version_id <> ?::uuid)
        AND NOT EXISTS (SELECT 1 FROM policy_skip s
                         WHERE s.rule_id = ? AND s.version_id = rl.version_id AND s.expires_at > now()
                           AND (s.environment_id IS NULL OR s.environment_id = j.environment_id)
                           AND (s.resource_id IS NULL OR s.resource_id = j.resource_id))`,
    [hold.workspaceId, hold.version?.id ?? null, hold.version?.id ?? null, hold.id],
  );
  const held = (await covered(hold, queued)).map((job) => job.id);
  if (held.length === 0) return;
  await tx.execute(
    `INSERT INTO job_hold (job_id, hold_id) SELECT unnest(?::uuid[]), ? ON CONFLICT DO NOTHING`,
    [uuidArray(held), hold.id],
  );
}

/** The waiting releases on the hold's targets evaluate again. */
async function wakeCoveredReleases(tx: EntityManager, hold: StoredHold): Promise<void> {
  const pending = await tx.execute<(CoveredRow & { id: string })[]>(
    `SELECT rl.id, rl.workspace_id, rl.deployment_id, ${TARGET_RECORD_COLUMNS}
       FROM release rl
       ${TARGET_RECORD_JOINS('rl')}
      WHERE rl.workspace_id = ? AND rl.phase = 'pending' AND (?::uuid IS NULL OR rl.deployment_id = ?::uuid)`,
    [hold.workspaceId, hold.deploymentId ?? null, hold.deploymentId ?? null],
  );
  await wakeReleases(
    tx,
    (await covered(hold, pending)).map((release) => release.id),
  );
}

interface PinTarget extends CoveredRow {
  resource_id: string;
  environment_id: string;
  current_version_id: string | null;
  active_version_id: string | null;
  newest_version_id: string | null;
  newest_release_id: string | null;
  newest_phase: string | null;
  pinned_release_id: string | null;
  pinned_phase: string | null;
}

/** The pin's deployment's targets it covers, with what runs there and its version's release there. */
async function pinTargets(tx: EntityManager, hold: StoredHold): Promise<PinTarget[]> {
  const targets = await tx.execute<PinTarget[]>(
    `SELECT t.workspace_id, t.deployment_id, t.environment_id, t.resource_id, ${TARGET_RECORD_COLUMNS},
            s.current_version_id, ar.version_id AS active_version_id, s.newest_version_id, s.newest_release_id, s.newest_phase,
            pr.id AS pinned_release_id, pr.phase AS pinned_phase
       FROM release_target t
       ${TARGET_RECORD_JOINS('t')}
       LEFT JOIN release_target_state s
         ON s.resource_id = t.resource_id AND s.environment_id = t.environment_id AND s.deployment_id = t.deployment_id
       LEFT JOIN release ar ON ar.id = s.active_release_id
       LEFT JOIN release pr
         ON pr.resource_id = t.resource_id AND pr.environment_id = t.environment_id
        AND pr.deployment_id = t.deployment_id AND pr.version_id = ?
      WHERE t.workspace_id = ? AND t.deployment_id = ?`,
    [hold.version!.id, hold.workspaceId, hold.deploymentId!],
  );
  return covered(hold, targets);
}

/**
 * A pin in force: each covered target that runs or is deploying another version gets the pinned
 * one, through a new release of it, or its earlier release run again; its gates (the pin passes it,
 * a busy target makes it wait for the job there to end) decide when.
 */
async function convergeToPin(tx: EntityManager, hold: StoredHold): Promise<void> {
  const pinned = hold.version!.id;
  const elsewhere = (await pinTargets(tx, hold)).filter(
    (target) =>
      target.current_version_id !== pinned ||
      (target.active_version_id !== null && target.active_version_id !== pinned),
  );
  const reason = `pinned to ${hold.version!.tag} by ${hold.createdBy.name}: ${hold.reason}`;
  const fresh = elsewhere.filter((target) => target.pinned_release_id === null);
  if (fresh.length > 0) {
    const ids = fresh.map(() => newId());
    const inserted = await tx.execute<{ id: string; resource_id: string; environment_id: string }[]>(
      `INSERT INTO release (id, workspace_id, resource_id, environment_id, deployment_id, version_id, phase_reason)
       SELECT id, ?, resource_id, environment_id, ?, ?, ?
         FROM unnest(?::uuid[], ?::uuid[], ?::uuid[]) AS k(id, resource_id, environment_id)
       ON CONFLICT (resource_id, environment_id, deployment_id, version_id) DO NOTHING
       RETURNING id, resource_id, environment_id`,
      [
        hold.workspaceId,
        hold.deploymentId!,
        pinned,
        reason,
        uuidArray(ids),
        uuidArray(fresh.map((target) => target.resource_id)),
        uuidArray(fresh.map((target) => target.environment_id)),
      ],
    );
    await recordAuditEvents(
      tx,
      inserted.map((row) =>
        releaseEvent(
          'release.created',
          {
            id: row.id,
            workspaceId: hold.workspaceId,
            deploymentId: hold.deploymentId!,
            environmentId: row.environment_id,
            resourceId: row.resource_id,
            versionId: pinned,
          },
          { reason },
        ),
      ),
    );
    await enqueueOrchestrations(
      tx,
      fresh.map((target, index) => ({
        kind: 'release.start',
        release: {
          id: ids[index]!,
          workspaceId: hold.workspaceId,
          deploymentId: hold.deploymentId!,
          environmentId: target.environment_id,
          resourceId: target.resource_id,
          versionId: hold.version!.id,
        },
      })),
    );
  }
  const ran = elsewhere.filter(
    (target) => target.pinned_phase !== null && !['pending', 'running'].includes(target.pinned_phase),
  );
  for (const target of ran) {
    await requestRedeploy(
      tx,
      target.pinned_release_id!,
      { at: new Date().toISOString(), by: hold.createdBy.name, overrideReason: null },
      reason,
    );
  }
}

/**
 * A pin ended: where its version now runs and a newer release had finished (succeeded before the
 * pin, or passed over), the newest release runs again under its own gates.
 */
async function resumeAfterPin(tx: EntityManager, hold: StoredHold): Promise<void> {
  const behind = (await pinTargets(tx, hold)).filter(
    (target) =>
      target.newest_release_id !== null &&
      target.newest_version_id !== target.current_version_id &&
      (target.newest_phase === 'succeeded' || target.newest_phase === 'superseded'),
  );
  for (const target of behind) {
    await requestRedeploy(
      tx,
      target.newest_release_id!,
      { at: new Date().toISOString(), by: hold.createdBy.name, overrideReason: null },
      `the pin to ${hold.version!.tag} by ${hold.createdBy.name} ended`,
    );
  }
}
