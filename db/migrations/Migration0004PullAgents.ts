import { Migration } from '@mikro-orm/migrations';

/**
 * Pull delivery: the claim record of a claim under a lease (docs/behaviour.md "Claim record": one per job
 * at most, with the lease's end and its fencing token), and API keys scoped to one job agent.
 */
export class Migration0004PullAgents extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE job_claim (
        job_id uuid PRIMARY KEY REFERENCES job(id) ON DELETE CASCADE,
        job_agent_id uuid NOT NULL REFERENCES job_agent(id) ON DELETE CASCADE,
        workspace_id uuid NOT NULL REFERENCES workspace(id) ON DELETE CASCADE,
        claim_id uuid NOT NULL UNIQUE,
        lease_seconds integer NOT NULL CHECK (lease_seconds BETWEEN 5 AND 3600),
        claimed_at timestamptz NOT NULL DEFAULT now(),
        claim_expires_at timestamptz NOT NULL
      )`);
    this.addSql(
      `ALTER TABLE api_key ADD COLUMN job_agent_id uuid REFERENCES job_agent(id) ON DELETE CASCADE`,
    );
  }
}
