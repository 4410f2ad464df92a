import { Migration } from '@mikro-orm/migrations';

/**
 * Cheaper fan-out (bench/fanout):
 * - New release targets are flagged `rollout_pending` instead of being listed in their outbox
 *   message, so one target rollout per workspace drains any number of them in batches. Messages
 *   written in the old shape are converted: their targets are flagged.
 * - The relay serves workflow starts (`release.start`, thousands per version) in a lane of their
 *   own, so a fan-out never delays the other messages; the index orders each lane.
 */
export class Migration0006CoalescedRollouts extends Migration {
  override up(): void {
    this.addSql(`ALTER TABLE release_target ADD COLUMN rollout_pending boolean NOT NULL DEFAULT false`);
    this.addSql(
      `CREATE INDEX release_target_rollout_pending_idx ON release_target (workspace_id, created_at) WHERE rollout_pending`,
    );
    this.addSql(`
      UPDATE release_target t SET rollout_pending = true
        FROM outbox o, jsonb_to_recordset(o.payload->'targets') AS x("resourceId" uuid, "environmentId" uuid, "deploymentId" uuid)
       WHERE o.kind = 'targets.added' AND t.resource_id = x."resourceId" AND t.environment_id = x."environmentId"
         AND t.deployment_id = x."deploymentId"`);
    this.addSql(`
      UPDATE outbox SET payload = jsonb_build_object('kind', 'targets.added', 'workspaceId', payload->>'workspaceId')
       WHERE kind = 'targets.added' AND payload ? 'targets'`);
    this.addSql(`CREATE INDEX outbox_lane_idx ON outbox ((kind = 'release.start'), id)`);
  }
}
