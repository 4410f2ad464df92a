import { Migration } from '@mikro-orm/migrations';

/**
 * A redeploy keeps the release's policies unless it carries an override with a reason: the pending
 * override (cleared when the jobs start) and every redeploy asked for, with who asked and why.
 */
export class Migration0008RedeployOverrides extends Migration {
  override up(): void {
    this.addSql(
      `ALTER TABLE release ADD COLUMN redeploy_override_reason text,
                          ADD COLUMN redeploys jsonb NOT NULL DEFAULT '[]'::jsonb`,
    );
  }
}
