import { Migration } from '@mikro-orm/migrations';

/**
 * Graceful cancel (docs/behaviour.md "Pull job agents"): a claimed job whose cancel was asked keeps
 * running until its agent stops it and reports `cancelled`, or until the deadline, when it ends
 * `cancelled` anyway.
 */
export class Migration0032GracefulCancel extends Migration {
  override up(): void {
    this.addSql(
      `ALTER TABLE job ADD COLUMN cancel_requested_at timestamptz, ADD COLUMN cancel_deadline timestamptz`,
    );
  }
}
