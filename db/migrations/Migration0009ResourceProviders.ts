import { Migration } from '@mikro-orm/migrations';

/**
 * Resource providers (Ctrlplane's scanners and `ctrlc sync`): named per workspace, each owning the
 * resources its last set named. A provider is deleted only once it owns no live resource
 * (application/resourceProviders.ts); the resources it deleted earlier keep their history, so they
 * let go of it (SET NULL) rather than block the delete or vanish with it.
 */
export class Migration0009ResourceProviders extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE resource_provider (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        name text NOT NULL,
        metadata jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT resource_provider_workspace_id_name_unique UNIQUE (workspace_id, name)
      )`);
    this.addSql(
      `ALTER TABLE resource ADD CONSTRAINT resource_provider_id_fkey
         FOREIGN KEY (provider_id) REFERENCES resource_provider(id) ON DELETE SET NULL`,
    );
    this.addSql(
      `CREATE INDEX resource_live_provider_idx ON resource (provider_id, created_at, id) WHERE deleted_at IS NULL`,
    );
  }
}
