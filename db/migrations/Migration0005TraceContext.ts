import { Migration } from '@mikro-orm/migrations';

/**
 * The trace context of the request (or activity) that wrote an outbox row, so the relay's Temporal
 * call continues that trace; NULL when tracing is off.
 */
export class Migration0005TraceContext extends Migration {
  override up(): void {
    this.addSql(`ALTER TABLE outbox ADD COLUMN trace_context jsonb`);
  }
}
