import { Migration } from '@mikro-orm/migrations';

/**
 * Ctrlplane's variable sets: values for every release target a set's selector matches, resolved into
 * jobs beneath deployment variable values (domain/variables.ts). A sensitive value is stored sealed,
 * bound to its set.
 */
export class Migration0010VariableSets extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE variable_set (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        selector text NOT NULL,
        priority integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    this.addSql(`CREATE INDEX variable_set_workspace_idx ON variable_set (workspace_id, created_at, id)`);
    this.addSql(`
      CREATE TABLE variable_set_variable (
        variable_set_id uuid NOT NULL REFERENCES variable_set(id) ON DELETE CASCADE,
        key text NOT NULL,
        value jsonb,
        reference jsonb,
        sensitive boolean NOT NULL DEFAULT false,
        PRIMARY KEY (variable_set_id, key),
        CONSTRAINT variable_set_variable_one_kind CHECK ((value IS NULL) <> (reference IS NULL))
      )`);
  }
}
