import { Migration } from '@mikro-orm/migrations';

/**
 * Dependencies of a deployment version on other deployments: the version deploys on a resource only
 * while each dependency's current version there matches its selector.
 */
export class Migration0011VersionDependencies extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE deployment_version_dependency (
        deployment_version_id uuid NOT NULL REFERENCES deployment_version(id) ON DELETE CASCADE,
        dependency_deployment_id uuid NOT NULL REFERENCES deployment(id) ON DELETE CASCADE,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        version_selector text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (deployment_version_id, dependency_deployment_id)
      )`);
    this.addSql(
      'CREATE INDEX deployment_version_dependency_on ON deployment_version_dependency (dependency_deployment_id)',
    );
  }
}
