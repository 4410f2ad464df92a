import { Migration } from '@mikro-orm/migrations';

/** Ctrlplane's deployment fields: a CEL selector of job agents, and the configuration they get. */
export class Migration0015DeploymentAgentSelector extends Migration {
  override up(): void {
    this.addSql(
      `ALTER TABLE deployment ADD COLUMN job_agent_selector text,
                             ADD COLUMN job_agent_config jsonb NOT NULL DEFAULT '{}'::jsonb`,
    );
  }
}
