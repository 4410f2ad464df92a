import { Migration } from '@mikro-orm/migrations';

/**
 * What the sync-then-ship sequence looks up (bench/fanout.ts): a workspace's waiting
 * `targets.added` row, which a resource write joins instead of adding another (db/outbox.ts
 * `enqueueTargetsAdded`); the relay's lanes, target rollouts' wake-ups now a lane of their own
 * (db/outbox.ts OUTBOX_LANE_SQL: the index is on that expression); and the versions whose rollout
 * was asked for and has not written its first batch yet, for which the relay holds release starts
 * back (worker/outboxRelay.ts).
 */
export class Migration0040FanoutAfterSync extends Migration {
  override up(): void {
    this.addSql(
      `CREATE INDEX outbox_targets_added_idx ON outbox ((payload->>'workspaceId'), id) WHERE kind = 'targets.added'`,
    );
    this.addSql('DROP INDEX outbox_relay_lanes_idx');
    this.addSql(
      `CREATE INDEX outbox_relay_lanes_idx ON outbox ((CASE WHEN kind = 'release.start' THEN 1 WHEN kind IN ('lease.start', 'lease.end') THEN 2 WHEN kind = 'webhook.deliver' THEN 3 WHEN kind = 'targets.added' THEN 4 ELSE 0 END), id)`,
    );
    this.addSql(
      `CREATE INDEX deployment_version_rollout_pending_idx ON deployment_version (updated_at) WHERE rollout_status = 'pending'`,
    );
  }
}
