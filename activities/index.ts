import type { Database } from '../db/database';
import type { SecretBox } from '../db/secrets';
import { createLeaseActivities } from './lease';
import { createReleaseActivities } from './release';
import { createRolloutActivities } from './rollout';

export interface ActivityDeps {
  orm: Database;
  secrets: SecretBox;
}

/** Every activity the worker registers, built from the dependencies they share. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createRolloutActivities(deps),
    ...createReleaseActivities(deps),
    ...createLeaseActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
