import { Migration } from '@mikro-orm/migrations';

/**
 * The resource model: systems and their links, environments, resources and their variables, job
 * agents, deployment variables and values, policies, and the release targets derived from them.
 */
export class Migration0002Records extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE system (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        name text NOT NULL,
        slug text NOT NULL,
        description text,
        metadata jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT system_workspace_id_slug_unique UNIQUE (workspace_id, slug)
      )`);
    this.addSql(`
      CREATE TABLE environment (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        name text NOT NULL,
        description text,
        resource_selector text,
        metadata jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT environment_workspace_id_name_unique UNIQUE (workspace_id, name)
      )`);
    this.addSql(`ALTER TABLE deployment ADD COLUMN resource_selector text`);
    this.addSql(`ALTER TABLE deployment ADD COLUMN job_agents jsonb NOT NULL DEFAULT '[]'`);
    this.addSql(`CREATE INDEX deployment_workspace_name_idx ON deployment (workspace_id, name)`);
    for (const [table, column, target] of [
      ['system_deployment', 'deployment_id', 'deployment'],
      ['system_environment', 'environment_id', 'environment'],
    ] as const) {
      this.addSql(`
        CREATE TABLE ${table} (
          system_id uuid NOT NULL REFERENCES system(id) ON DELETE CASCADE,
          ${column} uuid NOT NULL REFERENCES ${target}(id) ON DELETE CASCADE,
          workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
          created_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (system_id, ${column})
        )`);
      this.addSql(`CREATE INDEX ${table}_${column}_idx ON ${table} (${column})`);
    }
    this.addSql(`
      CREATE TABLE resource (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        identifier text NOT NULL,
        name text NOT NULL,
        version text NOT NULL,
        kind text NOT NULL,
        config jsonb NOT NULL DEFAULT '{}',
        metadata jsonb NOT NULL DEFAULT '{}',
        provider_id uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz
      )`);
    // One live resource per identifier; deleted ones stay readable by id.
    this.addSql(
      `CREATE UNIQUE INDEX resource_live_identifier_unique ON resource (workspace_id, identifier) WHERE deleted_at IS NULL`,
    );
    this.addSql(
      `CREATE INDEX resource_live_order_idx ON resource (workspace_id, created_at, id) WHERE deleted_at IS NULL`,
    );
    this.addSql(`
      CREATE TABLE resource_variable (
        resource_id uuid NOT NULL REFERENCES resource(id) ON DELETE CASCADE,
        key text NOT NULL,
        value jsonb NOT NULL,
        sensitive boolean NOT NULL DEFAULT false,
        PRIMARY KEY (resource_id, key)
      )`);
    this.addSql(`
      CREATE TABLE job_agent (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        name text NOT NULL,
        type text NOT NULL CHECK (type IN ('http-pull', 'github-app', 'argo-cd', 'tfe', 'test-runner')),
        config jsonb NOT NULL DEFAULT '{}',
        metadata jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT job_agent_workspace_id_name_unique UNIQUE (workspace_id, name)
      )`);
    this.addSql(`
      CREATE TABLE deployment_variable (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        deployment_id uuid NOT NULL REFERENCES deployment(id) ON DELETE CASCADE,
        key text NOT NULL,
        description text,
        default_value jsonb,
        sensitive boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT deployment_variable_deployment_id_key_unique UNIQUE (deployment_id, key)
      )`);
    this.addSql(`
      CREATE TABLE deployment_variable_value (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        variable_id uuid NOT NULL REFERENCES deployment_variable(id) ON DELETE CASCADE,
        priority integer NOT NULL DEFAULT 0,
        value jsonb,
        reference jsonb,
        resource_selector text,
        sensitive boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT deployment_variable_value_one_kind CHECK ((value IS NULL) <> (reference IS NULL))
      )`);
    this.addSql(
      `CREATE INDEX deployment_variable_value_variable_idx ON deployment_variable_value (variable_id, priority DESC)`,
    );
    this.addSql(`
      CREATE TABLE policy (
        id uuid PRIMARY KEY,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        name text NOT NULL,
        description text,
        selector text NOT NULL DEFAULT 'true',
        priority integer NOT NULL DEFAULT 0,
        enabled boolean NOT NULL DEFAULT true,
        metadata jsonb NOT NULL DEFAULT '{}',
        rules jsonb NOT NULL DEFAULT '[]',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT policy_workspace_id_name_unique UNIQUE (workspace_id, name)
      )`);
    this.addSql(`
      CREATE TABLE release_target (
        resource_id uuid NOT NULL REFERENCES resource(id) ON DELETE CASCADE,
        environment_id uuid NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
        deployment_id uuid NOT NULL REFERENCES deployment(id) ON DELETE CASCADE,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (resource_id, environment_id, deployment_id)
      )`);
    this.addSql(
      `CREATE INDEX release_target_deployment_idx ON release_target (deployment_id, environment_id)`,
    );
    this.addSql(`CREATE INDEX release_target_environment_idx ON release_target (environment_id)`);
    this.addSql(`CREATE INDEX release_target_workspace_idx ON release_target (workspace_id, created_at)`);
  }
}
