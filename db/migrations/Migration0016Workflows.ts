import { Migration } from '@mikro-orm/migrations';

/**
 * Runbooks (tables under Ctrlplane's name for them, `workflow`) and their runs. A run's jobs are
 * ordinary jobs without a release: the release columns become optional, and each job belongs to a
 * release or to a run. The class keeps its name: applied migrations are recorded by it.
 */
export class Migration0016Workflows extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE workflow (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        name text NOT NULL,
        slug text NOT NULL,
        inputs jsonb NOT NULL DEFAULT '[]'::jsonb,
        job_agents jsonb NOT NULL DEFAULT '[]'::jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (workspace_id, slug)
      )`);
    this.addSql(`
      CREATE TABLE workflow_run (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        workflow_id uuid NOT NULL REFERENCES workflow(id) ON DELETE CASCADE,
        inputs jsonb NOT NULL DEFAULT '{}'::jsonb,
        status text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
        created_at timestamptz NOT NULL DEFAULT now(),
        completed_at timestamptz
      )`);
    this.addSql('CREATE INDEX workflow_run_by_workflow ON workflow_run (workflow_id, created_at)');
    this.addSql(
      `ALTER TABLE job ALTER COLUMN release_id DROP NOT NULL,
                      ALTER COLUMN deployment_id DROP NOT NULL,
                      ALTER COLUMN environment_id DROP NOT NULL,
                      ALTER COLUMN resource_id DROP NOT NULL,
                      ADD COLUMN workflow_run_id uuid REFERENCES workflow_run(id) ON DELETE CASCADE,
                      ADD CONSTRAINT job_release_or_run CHECK ((release_id IS NULL) <> (workflow_run_id IS NULL))`,
    );
    this.addSql(
      'CREATE INDEX job_by_workflow_run ON job (workflow_run_id) WHERE workflow_run_id IS NOT NULL',
    );
  }
}
