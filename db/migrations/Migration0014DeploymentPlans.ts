import { Migration } from '@mikro-orm/migrations';

/** Deployment plans: what a proposed version would change on each target, computed once and kept. */
export class Migration0014DeploymentPlans extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE deployment_plan (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        deployment_id uuid NOT NULL REFERENCES deployment(id) ON DELETE CASCADE,
        status text NOT NULL,
        version jsonb NOT NULL,
        metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
        summary jsonb NOT NULL,
        targets jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
  }
}
