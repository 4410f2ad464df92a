import { Migration } from '@mikro-orm/migrations';

/** A deployment's releases by when they ended: what DORA figures read (application/dora.ts). */
export class Migration0031ReleaseCompletions extends Migration {
  override up(): void {
    this.addSql(
      `CREATE INDEX release_completed_idx ON release (deployment_id, completed_at) WHERE completed_at IS NOT NULL`,
    );
  }
}
