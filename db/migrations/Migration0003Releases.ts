import { Migration } from '@mikro-orm/migrations';

/**
 * Releases, jobs, verifications, approvals and the state of each release target. Two orchestration
 * invariants (docs/design.md "Invariants") are constraints here: one release per release target and version, and one
 * active job per release and agent entry; the target slot (`release_target_state.active_release_id`)
 * holds at most one release with active jobs per target.
 */
export class Migration0003Releases extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE release (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        deployment_id uuid NOT NULL REFERENCES deployment(id) ON DELETE CASCADE,
        environment_id uuid NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
        resource_id uuid NOT NULL REFERENCES resource(id) ON DELETE CASCADE,
        version_id uuid NOT NULL REFERENCES deployment_version(id) ON DELETE CASCADE,
        phase text NOT NULL DEFAULT 'pending'
          CHECK (phase IN ('pending', 'running', 'succeeded', 'failed', 'cancelled', 'superseded')),
        phase_reason text,
        evaluation jsonb,
        redeploy_requested_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        completed_at timestamptz,
        CONSTRAINT release_target_version_unique UNIQUE (resource_id, environment_id, deployment_id, version_id)
      )`);
    this.addSql(`CREATE INDEX release_workspace_order_idx ON release (workspace_id, created_at, id)`);
    this.addSql(`CREATE INDEX release_version_env_idx ON release (version_id, environment_id)`);
    this.addSql(
      `CREATE INDEX release_open_idx ON release (resource_id, environment_id, deployment_id) WHERE phase IN ('pending', 'running')`,
    );

    this.addSql(`
      CREATE TABLE job (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        release_id uuid NOT NULL REFERENCES release(id) ON DELETE CASCADE,
        deployment_id uuid NOT NULL,
        environment_id uuid NOT NULL,
        resource_id uuid NOT NULL,
        job_agent_id uuid REFERENCES job_agent(id) ON DELETE SET NULL,
        agent_type text,
        agent_entry integer,
        attempt integer NOT NULL DEFAULT 1,
        status text NOT NULL CHECK (status IN ('pending', 'queued', 'triggered', 'in_progress', 'action_required',
          'successful', 'failure', 'cancelled', 'skipped', 'invalid_job_agent', 'invalid_integration',
          'external_run_not_found')),
        message text,
        external_id text,
        job_agent_config jsonb NOT NULL DEFAULT '{}',
        dispatch_context jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        completed_at timestamptz
      )`);
    this.addSql(
      `CREATE UNIQUE INDEX job_one_active_per_entry ON job (release_id, coalesce(agent_entry, -1))
         WHERE status IN ('pending', 'queued', 'triggered', 'in_progress', 'action_required')`,
    );
    this.addSql(`CREATE INDEX job_release_idx ON job (release_id, created_at)`);
    this.addSql(`CREATE INDEX job_agent_queue_idx ON job (job_agent_id, status, created_at, id)`);
    this.addSql(
      `CREATE INDEX job_target_idx ON job (resource_id, environment_id, deployment_id, created_at DESC)`,
    );
    this.addSql(`CREATE INDEX job_workspace_order_idx ON job (workspace_id, created_at, id)`);

    this.addSql(`
      CREATE TABLE job_verification (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        job_id uuid NOT NULL REFERENCES job(id) ON DELETE CASCADE,
        policy_id uuid,
        rule_id uuid,
        trigger text NOT NULL,
        metrics jsonb NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'passed', 'failed', 'cancelled')),
        measurements jsonb NOT NULL DEFAULT '[]',
        message text,
        created_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        completed_at timestamptz
      )`);
    this.addSql(`CREATE INDEX job_verification_job_idx ON job_verification (job_id)`);

    this.addSql(`
      CREATE TABLE release_target_state (
        resource_id uuid NOT NULL REFERENCES resource(id) ON DELETE CASCADE,
        environment_id uuid NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
        deployment_id uuid NOT NULL REFERENCES deployment(id) ON DELETE CASCADE,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        desired_release_id uuid REFERENCES release(id) ON DELETE SET NULL,
        current_release_id uuid REFERENCES release(id) ON DELETE SET NULL,
        active_release_id uuid REFERENCES release(id) ON DELETE SET NULL,
        latest_job_id uuid REFERENCES job(id) ON DELETE SET NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (resource_id, environment_id, deployment_id)
      )`);

    this.addSql(`
      CREATE TABLE approval (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        version_id uuid NOT NULL REFERENCES deployment_version(id) ON DELETE CASCADE,
        environment_id uuid NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
        user_id text NOT NULL,
        user_name text NOT NULL,
        status text NOT NULL CHECK (status IN ('approved', 'rejected')),
        reason text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT approval_one_per_user UNIQUE (version_id, environment_id, user_id)
      )`);
  }
}
