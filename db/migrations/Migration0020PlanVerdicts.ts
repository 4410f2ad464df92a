import { Migration } from '@mikro-orm/migrations';

/**
 * Each `planValidationOpa` rule's latest verdict on a release's plan, written by the release's
 * evaluation and read by explanations (which never run the policy engine): one per release and
 * rule, valid for the plan whose digest it carries.
 */
export class Migration0020PlanVerdicts extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE plan_verdict (
        release_id uuid NOT NULL REFERENCES release(id) ON DELETE CASCADE,
        rule_id uuid NOT NULL,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        digest text NOT NULL,
        verdict jsonb NOT NULL,
        evaluated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (release_id, rule_id)
      )`);
  }
}
