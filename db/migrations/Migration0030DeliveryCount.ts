import { Migration } from '@mikro-orm/migrations';

/**
 * The delivery cap (docs/behaviour.md "Pull job agents"): how many of a job's leases expired, counted
 * by the reaper; at the agent's `maxDeliveries` the job ends `failure` instead of being queued again.
 */
export class Migration0030DeliveryCount extends Migration {
  override up(): void {
    this.addSql(`ALTER TABLE job ADD COLUMN expired_leases int NOT NULL DEFAULT 0`);
  }
}
