import type { EntityManager } from '@mikro-orm/postgresql';
import { chunk, type OrchestrationMessage } from '../domain/orchestration';
import type { ReleaseTargetRef } from '../domain/releaseTargets';
import { enqueueOrchestrations } from './outbox';
import { preparedStatement, runPrepared } from './preparedStatements';
import { targetRows, targetRowsSql } from './sql';

/** The outbox messages that ask the workflows of these releases to evaluate again. */
export function releaseWakeMessages(releaseIds: readonly string[]): OrchestrationMessage[] {
  return chunk([...new Set(releaseIds)]).map((ids) => ({ kind: 'release.wake', releaseIds: ids }));
}

/** Asks the workflows of these releases to evaluate again, once the transaction commits. */
export async function wakeReleases(em: EntityManager, releaseIds: readonly string[]): Promise<void> {
  await enqueueOrchestrations(em, releaseWakeMessages(releaseIds));
}

/**
 * A release `r` not yet finished: the predicate of the partial index `release_open_idx`, so the
 * lookups of open releases by target use it.
 */
const OPEN_RELEASE_SQL = "r.phase IN ('pending', 'running')";

/**
 * SQL for the open releases of the target of `row` (a row with its resource, environment and
 * deployment ids), to be joined LATERAL: each row's are looked up in `release_open_idx`. `OFFSET 0`
 * keeps the planner from turning the lookups into one join over every open release, which it
 * chooses when `release` grows faster than its statistics follow, as in a fan-out (ARCHITECTURE.md
 * "Fan-out": tens of milliseconds a batch, sorting every open release of the workspace).
 */
export const OPEN_RELEASES_OF = (row: string) =>
  `SELECT r.* FROM release r
    WHERE r.resource_id = ${row}.resource_id AND r.environment_id = ${row}.environment_id
      AND r.deployment_id = ${row}.deployment_id AND ${OPEN_RELEASE_SQL}
   OFFSET 0`;

/** Releases not yet finished on the targets $1 (`targetRows`), but the release $2 (when not null). */
const OPEN_RELEASES_OF_TARGETS = preparedStatement(
  'open_releases_of_targets',
  `SELECT r.id
     FROM ${targetRowsSql('$1', 't')}
    CROSS JOIN LATERAL (${OPEN_RELEASES_OF('t')}) r
    WHERE r.id <> coalesce($2::uuid, '00000000-0000-0000-0000-000000000000')`,
);

/** Releases not yet finished on these targets. */
export async function openReleasesOfTargets(
  em: EntityManager,
  targets: readonly ReleaseTargetRef[],
  except?: string,
): Promise<string[]> {
  if (targets.length === 0) return [];
  const rows = await runPrepared<{ id: string }>(em, OPEN_RELEASES_OF_TARGETS, [
    targetRows(targets),
    except ?? null,
  ]);
  return rows.map((row) => row.id);
}
