import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { Database } from '../db/database';
import { rollOutTargets, rollOutVersionBatch, type FanoutResult } from '../db/releaseFanout';
import type { ReleaseTargetRef } from '../domain/releaseTargets';
import { startReleaseWorkflows, wakeReleaseWorkflows } from './releaseWorkflows';

export interface RolloutActivityDeps {
  orm: Database;
  client: Client;
  taskQueue: string;
}

/** Releases created and their workflows started, in batches: re-running a batch creates and starts nothing twice. */
export function createRolloutActivities({ orm, client, taskQueue }: RolloutActivityDeps) {
  const fork = () => orm.em.fork() as EntityManager;

  async function launch(result: FanoutResult): Promise<void> {
    await startReleaseWorkflows(client, taskQueue, result.releases);
    await wakeReleaseWorkflows(client, result.superseded);
  }

  return {
    /** One batch of a version's rollout; returns the cursor of the next batch, if there is one. */
    async rollOutVersionBatch(input: { versionId: string; after?: string; batchSize: number }) {
      const result = await fork().transactional((em) =>
        rollOutVersionBatch(em, input.versionId, input.after, input.batchSize),
      );
      await launch(result);
      return { next: result.next, releases: result.releases.length };
    },

    async rollOutTargets(input: { workspaceId: string; targets: ReleaseTargetRef[] }) {
      const result = await fork().transactional((em) => rollOutTargets(em, input.workspaceId, input.targets));
      await launch(result);
      return { releases: result.releases.length };
    },

    async recordRollout(input: {
      versionId: string;
      releaseCount: number;
      completed: boolean;
    }): Promise<void> {
      await fork().execute(
        `UPDATE deployment_version
            SET rollout_status = CASE WHEN ? THEN 'completed' ELSE 'running' END,
                rollout_release_count = ?,
                rollout_completed_at = CASE WHEN ? THEN coalesce(rollout_completed_at, now()) END
          WHERE id = ?`,
        [input.completed, input.releaseCount, input.completed, input.versionId],
      );
    },
  };
}
