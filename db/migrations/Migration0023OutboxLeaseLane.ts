import { Migration } from '@mikro-orm/migrations';

/**
 * The relay's lanes (worker/outboxRelay.ts) become three: release starts, leases (a burst of claims
 * starts a burst of lease workflows) and every other message, each read in id order from the index.
 */
export class Migration0023OutboxLeaseLane extends Migration {
  override up(): void {
    // The expression the relay selects by (db/outbox.ts OUTBOX_LANE_SQL), as it was written then.
    this.addSql(
      `CREATE INDEX outbox_relay_lane_idx ON outbox ((CASE WHEN kind = 'release.start' THEN 1 WHEN kind IN ('lease.start', 'lease.end') THEN 2 ELSE 0 END), id)`,
    );
    this.addSql('DROP INDEX IF EXISTS outbox_lane_idx');
  }
}
