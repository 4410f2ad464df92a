import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from '../db/database';
import { advanceRollout } from '../engine/executor';
import type { RolloutAdvance } from '../domain/activityResults';

/** The waves workflow's one step: the rollout advanced as its counts stand now, in one transaction. */
export function createRolloutWavesActivities({ orm }: { orm: Database }) {
  return {
    async advanceRollout(rolloutId: string): Promise<RolloutAdvance> {
      return (orm.em.fork() as EntityManager).transactional((tx) => advanceRollout(tx, rolloutId));
    },
  };
}
