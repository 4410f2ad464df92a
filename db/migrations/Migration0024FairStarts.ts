import { Migration } from '@mikro-orm/migrations';

/**
 * Release starts are relayed in fair shares by deployment (`outbox.fairness_key`, worker/outboxRelay.ts),
 * and trail slower while a version's fan-out writes its batches (`deployment_version.rollout_batch_at`).
 */
export class Migration0024FairStarts extends Migration {
  override up(): void {
    this.addSql('ALTER TABLE outbox ADD COLUMN fairness_key text');
    this.addSql(
      `CREATE INDEX outbox_fair_starts_idx ON outbox (fairness_key, id) WHERE kind = 'release.start'`,
    );
    this.addSql('ALTER TABLE deployment_version ADD COLUMN rollout_batch_at timestamptz');
  }
}
