import { Migration } from '@mikro-orm/migrations';

/**
 * The keys that changed a version after its creation (domain/versionAuthors.ts): under an approval
 * rule that requires another approver, they may no more approve it than its creator.
 */
export class Migration0037VersionEditors extends Migration {
  override up(): void {
    this.addSql(`ALTER TABLE deployment_version ADD COLUMN changed_by_ids text[] NOT NULL DEFAULT '{}'`);
  }
}
