import { Migration } from '@mikro-orm/migrations';

/**
 * The API key that created each version, so an approval rule can require someone else to approve it
 * (docs/behaviour.md "Approvals"). Unknown (null) for versions created before.
 */
export class Migration0027VersionCreator extends Migration {
  override up(): void {
    this.addSql('ALTER TABLE deployment_version ADD COLUMN created_by_id text');
  }
}
