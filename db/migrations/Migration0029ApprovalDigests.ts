import { Migration } from '@mikro-orm/migrations';

/**
 * Approvals bound to what ships (docs/behaviour.md "Approvals"): for each release an approval let
 * go, the digest of what that release would ship when it was approved. Approvals recorded before
 * have none and count as they did.
 */
export class Migration0029ApprovalDigests extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE approval_digest (
        approval_id uuid NOT NULL REFERENCES approval(id) ON DELETE CASCADE,
        release_id uuid NOT NULL REFERENCES release(id) ON DELETE CASCADE,
        digest text NOT NULL,
        PRIMARY KEY (release_id, approval_id)
      )`);
    this.addSql(`CREATE INDEX approval_digest_approval_idx ON approval_digest (approval_id)`);
  }
}
