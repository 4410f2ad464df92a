import type { EntityManager } from '@mikro-orm/postgresql';
import { recordAuditEvents } from '../../db/audit';
import { enqueueOrchestrations } from '../../db/outbox';
import type { SecretBox } from '../../db/secrets';
import { evaluationEvents, releaseEvent } from '../../domain/audit';
import { evaluateGates, type GateEvaluation } from '../../domain/gates';
import { releaseOfRow, type JobRef, type OrchestrationMessage } from '../../domain/orchestration';
import { loadReleases } from '../eligibility/releaseFacts';
import type { ReleaseRow } from '../planner/releaseRows';
import { withShipDigests } from '../planner/shipDigests';
import { createJobs, takeTargetSlots } from './jobCreation';

/**
 * Releases whose workflows have not started yet, started (docs/behaviour.md "Flow", steps 2–4),
 * set-based: their gates decided at once by the same `evaluateGates` their workflows call; for those
 * that pass and get their target's slot, the jobs written in the caller's transaction (a pull
 * agent's already queued); every one's evaluation recorded and its workflow start enqueued, with its
 * admission when its jobs were created here. The fan-out starts the releases it creates so
 * (`release.created` audited with them), a rollout in waves the ones it admits whose starts had not
 * gone out yet (./rollouts.ts). Answers how many got their jobs.
 */
export async function startReleases(
  tx: EntityManager,
  box: SecretBox,
  releases: ReleaseRow[],
  options: { created: boolean },
): Promise<number> {
  if (releases.length === 0) return 0;
  const evaluations = await decideGates(tx, box, releases);
  const jobs = await startAdmitted(tx, box, releases, evaluations);
  await recordEvaluations(tx, evaluations);
  await recordAuditEvents(
    tx,
    releases.flatMap((row) => {
      const release = releaseOfRow(row);
      return [
        ...(options.created ? [releaseEvent('release.created', release)] : []),
        ...evaluationEvents(release, null, evaluations.get(row.id)!),
      ];
    }),
  );
  await enqueueReleaseStarts(tx, releases, evaluations, jobs);
  return jobs.size;
}

/**
 * Each new release's gates, on the facts of the whole batch read at once; where the version has
 * approvals, with what each release would ship, so an approval counts only for what it covers.
 */
async function decideGates(
  tx: EntityManager,
  box: SecretBox,
  created: ReleaseRow[],
): Promise<Map<string, GateEvaluation>> {
  const loaded = await loadReleases(
    tx,
    created.map((release) => release.id),
  );
  const facts = await withShipDigests(tx, box, [...loaded.values()]);
  const now = new Date();
  return new Map(facts.map((release) => [release.releaseId, evaluateGates(release.facts, now)]));
}

/** The jobs of the releases that may proceed and whose target slot they could take. */
async function startAdmitted(
  tx: EntityManager,
  box: SecretBox,
  created: ReleaseRow[],
  evaluations: Map<string, GateEvaluation>,
): Promise<Map<string, JobRef[]>> {
  const proceeding = created.filter((release) => evaluations.get(release.id)!.decision === 'proceed');
  const held = await takeTargetSlots(tx, proceeding);
  return createJobs(
    tx,
    box,
    proceeding.filter((release) => held.has(release.id)).map((release) => ({ release, attempt: 1 })),
  );
}

async function recordEvaluations(tx: EntityManager, evaluations: Map<string, GateEvaluation>): Promise<void> {
  await tx.execute(
    `UPDATE release r
        SET evaluation = e.evaluation,
            phase_reason = CASE WHEN r.phase = 'pending' THEN e.evaluation->>'reason' ELSE r.phase_reason END
       FROM jsonb_to_recordset(?::jsonb) AS e(id uuid, evaluation jsonb)
      WHERE r.id = e.id`,
    [JSON.stringify([...evaluations].map(([id, evaluation]) => ({ id, evaluation })))],
  );
}

/** Every new release's workflow start, with its admission when its jobs were created here. */
async function enqueueReleaseStarts(
  tx: EntityManager,
  created: ReleaseRow[],
  evaluations: Map<string, GateEvaluation>,
  jobs: Map<string, JobRef[]>,
): Promise<void> {
  await enqueueOrchestrations(
    tx,
    created.map((release): OrchestrationMessage => {
      const started = jobs.get(release.id);
      return {
        kind: 'release.start',
        release: releaseOfRow(release),
        ...(started
          ? { admitted: { evaluation: evaluations.get(release.id)!, attempt: 1, jobs: started } }
          : {}),
      };
    }),
  );
}
