import { Migration } from '@mikro-orm/migrations';

/**
 * Saved CEL selectors whose evaluation was stopped by its budget (engine/selectors/selectorOverruns.ts): keyed by
 * scope and expression, shown on every record that holds the expression and in explain.
 */
export class Migration0018SelectorOverruns extends Migration {
  override up(): void {
    this.addSql(`CREATE TABLE selector_overrun (
      scope text NOT NULL,
      expression_hash text NOT NULL,
      expression text NOT NULL,
      spent double precision NOT NULL,
      times bigint NOT NULL,
      first_seen_at timestamptz NOT NULL,
      last_seen_at timestamptz NOT NULL,
      PRIMARY KEY (scope, expression_hash)
    )`);
  }
}
