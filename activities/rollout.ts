import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from '../db/database';
import { rollOutPendingTargets, rollOutVersionBatch } from '../db/releaseFanout';
import type { SecretBox } from '../db/secrets';

export interface RolloutActivityDeps {
  orm: Database;
  secrets: SecretBox;
}

/**
 * The fan-out's batches, each one transaction (db/releaseFanout.ts). They start no workflow
 * themselves: each new release's start is an outbox row of the same transaction, which the relay
 * turns into a workflow start, so a batch re-run after a crash creates and starts nothing twice.
 */
export function createRolloutActivities({ orm, secrets }: RolloutActivityDeps) {
  const fork = () => orm.em.fork() as EntityManager;
  return {
    /** One batch of a version's rollout; returns the cursor of the next batch, if there is one. */
    async rollOutVersionBatch(input: { versionId: string; after?: string; batchSize: number }) {
      const result = await rollOutVersionBatch(fork(), secrets, input.versionId, input.after, input.batchSize);
      return { next: result.next, created: result.created };
    },

    /** One batch of a workspace's new release targets; `more` when others may be waiting. */
    async rollOutPendingTargets(input: { workspaceId: string; batchSize: number }) {
      return rollOutPendingTargets(fork(), secrets, input.workspaceId, input.batchSize);
    },
  };
}
