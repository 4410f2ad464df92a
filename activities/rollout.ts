import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from '../db/database';
import { rollOutPendingTargets, rollOutVersionBatch } from '../engine/executor';
import type { SecretBox } from '../db/secrets';
import { refreshStaleStatistics } from '../db/plannerStatistics';
import type { PendingTargetsResult, VersionBatchesResult } from '../domain/activityResults';

export interface RolloutActivityDeps {
  orm: Database;
  secrets: SecretBox;
}

/**
 * How long one activity keeps taking batches before it reports back. Between two activities the
 * rollout needs a workflow task, and while a fan-out's releases start, the worker's workflow
 * tasks queue behind their first tasks for seconds; batches taken in a loop are not held up by it.
 */
const BATCHES_FOR_MS = 20_000;

/**
 * Transactions a version's batch runs side by side (engine/executor/releaseFanout.ts); the rollout's
 * first batch (no cursor yet) runs alone, so the first jobs come soonest.
 */
const VERSION_LANES = 2;

/**
 * The fan-out's batches, each one transaction (engine/executor/releaseFanout.ts). They start no workflow
 * themselves: each new release's start is an outbox row of the same transaction, which the relay
 * turns into a workflow start, so a batch re-run after a crash creates and starts nothing twice
 * (an activity retried after a lost worker repeats its batches harmlessly).
 */
export function createRolloutActivities({ orm, secrets }: RolloutActivityDeps) {
  const fork = () => orm.em.fork() as EntityManager;
  return {
    /**
     * Batches of a version's rollout from the cursor `after`, for up to 20 s (or `forMs`: 0 takes one
     * batch); returns the cursor of the next batch, if there is one.
     */
    async rollOutVersionBatches(input: {
      versionId: string;
      after?: string;
      batchSize: number;
      forMs?: number;
    }): Promise<VersionBatchesResult> {
      const until = Date.now() + (input.forMs ?? BATCHES_FOR_MS);
      await refreshStaleStatistics(fork());
      let after = input.after;
      let created = 0;
      do {
        const result = await rollOutVersionBatch(
          fork,
          secrets,
          input.versionId,
          after,
          input.batchSize,
          after === undefined ? 1 : VERSION_LANES,
        );
        created += result.created;
        after = result.next;
      } while (after && Date.now() < until);
      return { next: after, created };
    },

    /**
     * Batches of a workspace's new release targets, for up to 20 s (`forMs`: 0 takes one batch);
     * `more` when others may be waiting.
     */
    async rollOutPendingTargets(input: {
      workspaceId: string;
      batchSize: number;
      forMs?: number;
    }): Promise<PendingTargetsResult> {
      const until = Date.now() + (input.forMs ?? BATCHES_FOR_MS);
      await refreshStaleStatistics(fork());
      let created = 0;
      let more: boolean;
      do {
        const result = await rollOutPendingTargets(fork(), secrets, input.workspaceId, input.batchSize);
        created += result.created;
        more = result.more;
      } while (more && Date.now() < until);
      return { created, more };
    },
  };
}
