import { Migration } from '@mikro-orm/migrations';

/** Workspaces and API keys, deployments and versions, and the transactional outbox. */
export class Migration0001Foundation extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE workspace (
        id uuid PRIMARY KEY,
        name text NOT NULL,
        slug text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    this.addSql(`
      CREATE TABLE api_key (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        name text NOT NULL,
        key_prefix text NOT NULL,
        key_hash text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`);
    this.addSql(`CREATE INDEX api_key_workspace_idx ON api_key (workspace_id)`);
    this.addSql(`
      CREATE TABLE deployment (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        name text NOT NULL,
        slug text NOT NULL,
        description text,
        metadata jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT deployment_workspace_id_slug_unique UNIQUE (workspace_id, slug)
      )`);
    this.addSql(`
      CREATE TABLE deployment_version (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        deployment_id uuid NOT NULL REFERENCES deployment(id) ON DELETE CASCADE,
        tag text NOT NULL,
        name text,
        status text NOT NULL CHECK (status IN ('building', 'ready', 'failed')),
        config jsonb NOT NULL DEFAULT '{}',
        job_agent_config jsonb NOT NULL DEFAULT '{}',
        metadata jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        rollout_status text CHECK (rollout_status IN ('pending', 'running', 'completed')),
        rollout_release_count integer NOT NULL DEFAULT 0,
        rollout_completed_at timestamptz,
        CONSTRAINT deployment_version_deployment_id_tag_unique UNIQUE (deployment_id, tag)
      )`);
    this.addSql(
      `CREATE INDEX deployment_version_newest_idx ON deployment_version (deployment_id, created_at DESC, id DESC)`,
    );
    this.addSql(`
      CREATE TABLE outbox (
        id bigserial PRIMARY KEY,
        kind text NOT NULL,
        payload jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        available_at timestamptz NOT NULL DEFAULT now(),
        attempts integer NOT NULL DEFAULT 0,
        last_error text
      )`);
    this.addSql(`CREATE INDEX outbox_available_idx ON outbox (available_at, id)`);
  }
}
