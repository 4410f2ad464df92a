import { Migration } from '@mikro-orm/migrations';

/**
 * Workspace secrets (docs/security.md "Workspace secrets"): a value sealed to its name within its
 * workspace, that credential fields reference as `secret://<name>`. `destination` is where the
 * secret may be sent (domain/credentialBinding.ts), set by the first job agent or metric provider
 * that references it; a rotation keeps it, only deleting the secret releases it.
 */
export class Migration0041WorkspaceSecrets extends Migration {
  override up(): void {
    this.addSql(
      `CREATE TABLE workspace_secret (
         id uuid PRIMARY KEY,
         workspace_id uuid NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
         name text NOT NULL,
         value text NOT NULL,
         destination text,
         created_at timestamptz NOT NULL DEFAULT now(),
         updated_at timestamptz NOT NULL DEFAULT now(),
         UNIQUE (workspace_id, name)
       )`,
    );
  }
}
