import { Migration } from '@mikro-orm/migrations';

/**
 * Rollouts in waves (docs/behaviour.md "Rolling out to a fleet"): one `rollout` per version and
 * waves rule, what its workflow and operators left it at (the judgements people gave among it); one `rollout_member` per release under it,
 * with the wave its target belongs to and when the rollout let it through. The members of a wave are
 * counted together (`rollout_member_wave_idx`), and a release that ends finds its rollout by its id.
 */
export class Migration0042Rollouts extends Migration {
  override up(): void {
    this.addSql(
      `CREATE TABLE rollout (
         id uuid PRIMARY KEY,
         workspace_id uuid NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
         version_id uuid NOT NULL REFERENCES deployment_version (id) ON DELETE CASCADE,
         policy_id uuid NOT NULL,
         rule_id uuid NOT NULL,
         state text NOT NULL DEFAULT 'running'
           CHECK (state IN ('running', 'paused', 'halted', 'aborted', 'completed')),
         current_wave integer NOT NULL DEFAULT 0,
         reason text NOT NULL DEFAULT 'the rollout is starting',
         bake_until timestamptz,
         halt_reason text,
         halted_at timestamptz,
         baseline_failed integer NOT NULL DEFAULT 0,
         baseline_ran integer NOT NULL DEFAULT 0,
         resumed_at timestamptz,
         judged_waves integer[] NOT NULL DEFAULT '{}',
         judgement_wave integer,
         judgement_since timestamptz,
         judgements jsonb NOT NULL DEFAULT '[]',
         created_at timestamptz NOT NULL DEFAULT now(),
         updated_at timestamptz NOT NULL DEFAULT now(),
         UNIQUE (version_id, rule_id)
       )`,
    );
    this.addSql(
      `CREATE TABLE rollout_member (
         rollout_id uuid NOT NULL REFERENCES rollout (id) ON DELETE CASCADE,
         release_id uuid NOT NULL REFERENCES release (id) ON DELETE CASCADE,
         wave integer NOT NULL,
         admitted_at timestamptz,
         PRIMARY KEY (rollout_id, release_id)
       )`,
    );
    this.addSql(`CREATE INDEX rollout_member_wave_idx ON rollout_member (rollout_id, wave, admitted_at)`);
    this.addSql(`CREATE INDEX rollout_member_release_idx ON rollout_member (release_id)`);
  }
}
