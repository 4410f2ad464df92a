import { Migration } from '@mikro-orm/migrations';

/**
 * Approvals bound to what their approver saw (docs/behaviour.md "Approvals"): an approval's scope is
 * the set of digests of what each target of its version in its environment would ship at the
 * decision, recorded by the approval's own workflow. A release counts the approval only when what it
 * would ship now is in that set, whenever the release was created. `decision` counts a key's
 * decisions, so a scope computed for a replaced decision is never recorded.
 *
 * The per-release digests of earlier approvals were computed with each release's own id and cannot be
 * compared with scopes: those approvals are `unbound` and no longer count (their releases wait, and
 * explain asks for the approval again) rather than counting for whatever ships now.
 */
export class Migration0036ApprovalScopes extends Migration {
  override up(): void {
    this.addSql(`
      ALTER TABLE approval
        ADD COLUMN scope text NOT NULL DEFAULT 'unbound',
        ADD COLUMN decision integer NOT NULL DEFAULT 0`);
    this.addSql(`
      CREATE TABLE approval_scope (
        approval_id uuid NOT NULL REFERENCES approval(id) ON DELETE CASCADE,
        digest text NOT NULL,
        PRIMARY KEY (approval_id, digest)
      )`);
    this.addSql(`DROP TABLE approval_digest`);
  }
}
