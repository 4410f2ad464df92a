import { Migration } from '@mikro-orm/migrations';

/** When a version's rollout began its first batch: the start of its fan-out duration. */
export class Migration0017RolloutStartedAt extends Migration {
  override up(): void {
    this.addSql('ALTER TABLE deployment_version ADD COLUMN rollout_started_at timestamptz');
  }
}
