import {
  waveNames,
  type RolloutMembership,
  type RolloutState,
  type WavesSpec,
} from '../../../domain/rollouts';
import type { FactBatch, FactParts, SqlReader } from './factLoader';

/**
 * Each release's place in its version's rollouts in waves (engine/executor/rollouts.ts), read for
 * the releases under a waves rule only: their memberships and their rollouts' state, in one
 * statement by release id. A release with no membership (a pin's) gets no place.
 */
export async function load(sql: SqlReader, batch: FactBatch): Promise<FactParts<'waves'>> {
  const under = batch.under.waves;
  const rows = under
    ? await sql.execute<
        {
          release_id: string;
          rule_id: string;
          rollout_id: string;
          wave: number;
          admitted: boolean;
          state: RolloutState;
          reason: string;
        }[]
      >(
        `SELECT m.release_id, o.rule_id, o.id AS rollout_id, m.wave, m.admitted_at IS NOT NULL AS admitted,
                o.state, o.reason
           FROM rollout_member m JOIN rollout o ON o.id = m.rollout_id
          WHERE m.release_id = ANY(?::uuid[])`,
        [under.ids],
      )
    : [];
  const rules = new Map(
    (under?.releases ?? []).flatMap((release) =>
      release.rules.flatMap((rule) => (rule.waves ? [[rule.id, rule.waves as WavesSpec] as const] : [])),
    ),
  );
  const byRelease = new Map<string, { waves: Record<string, RolloutMembership> }>();
  for (const row of rows) {
    const rule = rules.get(row.rule_id);
    if (!rule) continue;
    const names = waveNames(rule);
    const places = byRelease.get(row.release_id)?.waves ?? {};
    places[row.rule_id] = {
      rolloutId: row.rollout_id,
      wave: row.wave,
      waveName: names[row.wave] ?? `#${row.wave + 1}`,
      waveCount: names.length,
      admitted: row.admitted,
      state: row.state,
      reason: row.reason,
    };
    byRelease.set(row.release_id, { waves: places });
  }
  return new Map(batch.releases.map((release) => [release.id, byRelease.get(release.id) ?? {}]));
}
