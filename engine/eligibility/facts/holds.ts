import { holdsOnTarget, readHolds } from '../holdMatching';
import type { FactBatch, FactParts, SqlReader } from './factLoader';

/** The unexpired holds of each release's workspace whose selector matches its target. */
export async function load(sql: SqlReader, batch: FactBatch): Promise<FactParts<'holds'>> {
  const holds = await readHolds(sql, batch.distinctWorkspaceIds, null);
  return new Map(
    batch.releases.map((release) => {
      const covering = holds.length > 0 ? holdsOnTarget(holds, release) : [];
      return [release.id, covering.length > 0 ? { holds: covering } : {}];
    }),
  );
}
