import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from '../db/database';
import type { SecretBox } from '../db/secrets';
import { advanceRollout } from '../engine/executor';
import type { RolloutAdvance } from '../domain/activityResults';

/** The waves workflow's one step: the rollout advanced as its counts stand now, in one transaction. */
export function createRolloutWavesActivities({ orm, secrets }: { orm: Database; secrets: SecretBox }) {
  return {
    async advanceRollout(rolloutId: string): Promise<RolloutAdvance> {
      return (orm.em.fork() as EntityManager).transactional((tx) => advanceRollout(tx, secrets, rolloutId));
    },
  };
}
