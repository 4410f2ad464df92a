import { Migration } from '@mikro-orm/migrations';

/**
 * Policy skips (docs/behaviour.md "Policy skips"): one version passes one rule on a scope until the
 * skip expires; the key that created it is recorded. Read by the releases' gates by version.
 */
export class Migration0026PolicySkips extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE policy_skip (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        rule_id uuid NOT NULL,
        version_id uuid NOT NULL REFERENCES deployment_version(id) ON DELETE CASCADE,
        environment_id uuid REFERENCES environment(id) ON DELETE CASCADE,
        resource_id uuid REFERENCES resource(id) ON DELETE CASCADE,
        reason text NOT NULL,
        expires_at timestamptz NOT NULL,
        created_by_id text NOT NULL,
        created_by_name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    this.addSql(`CREATE INDEX policy_skip_version_idx ON policy_skip (version_id, expires_at)`);
    this.addSql(`CREATE INDEX policy_skip_workspace_idx ON policy_skip (workspace_id, created_at, id)`);
  }
}
