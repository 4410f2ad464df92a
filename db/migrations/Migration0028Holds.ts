import { Migration } from '@mikro-orm/migrations';

/**
 * Holds (docs/behaviour.md "Holds and freezes"): a block or a pin over the release targets a CEL
 * selector matches, optionally only inside a schedule's windows, until it expires or is deleted.
 * `job_hold` names the queued jobs a hold keeps from polls and claims while it is in force: the
 * pull path reads it by job id (an anti-join on its primary key), never the hold's selector.
 */
export class Migration0028Holds extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE hold (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        selector text NOT NULL,
        effect text NOT NULL CHECK (effect IN ('block', 'pin')),
        version_id uuid REFERENCES deployment_version(id) ON DELETE CASCADE,
        reason text NOT NULL,
        expires_at timestamptz,
        schedule jsonb,
        created_by_id text NOT NULL,
        created_by_name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((effect = 'pin') = (version_id IS NOT NULL))
      )`);
    this.addSql(`CREATE INDEX hold_workspace_idx ON hold (workspace_id, created_at, id)`);
    this.addSql(`
      CREATE TABLE job_hold (
        job_id uuid NOT NULL REFERENCES job(id) ON DELETE CASCADE,
        hold_id uuid NOT NULL REFERENCES hold(id) ON DELETE CASCADE,
        PRIMARY KEY (job_id, hold_id)
      )`);
    this.addSql(`CREATE INDEX job_hold_hold_idx ON job_hold (hold_id)`);
  }
}
