import type { ReleaseFacts } from '../../../domain/gates';
import * as approvals from './approvals';
import { factBatch, type BatchRelease, type FactLoader, type SqlReader } from './factLoader';
import * as holds from './holds';
import * as newerReleases from './newerReleases';
import * as progression from './progression';
import * as rolloutPositions from './rolloutPositions';
import * as skips from './skips';
import * as upstream from './upstream';
import * as versionDependencies from './versionDependencies';
import * as waves from './waves';

/**
 * Every family of the facts the gates read beyond a release's own row, one loader each
 * (engine/eligibility/facts/<family>.ts, exporting `load`), run in this order. A rule kind that
 * reads facts of a new family adds its loader here.
 */
export const FACT_LOADERS = [
  approvals,
  skips,
  holds,
  newerReleases,
  rolloutPositions,
  waves,
  versionDependencies,
  upstream,
  progression,
] as const;

type FilledBy<Loader> = Loader extends FactLoader<infer Field> ? Field : never;

/** The fields of the facts the loaders fill; a release's row gives the others. */
export type LoadedField = FilledBy<(typeof FACT_LOADERS)[number]>;

/** Every loader's part of each release's facts, for a batch of releases, by release id. */
export async function loadFactFamilies(
  sql: SqlReader,
  releases: readonly BatchRelease[],
): Promise<Map<string, Pick<ReleaseFacts, LoadedField>>> {
  const batch = factBatch(releases);
  const parts: Map<string, Partial<ReleaseFacts>>[] = [];
  for (const loader of FACT_LOADERS) parts.push(await loader.load(sql, batch));
  // Each loader answers every release of the batch, so together they fill every loaded field.
  return new Map(
    releases.map((release) => [
      release.id,
      Object.assign({}, ...parts.map((part) => part.get(release.id))) as Pick<ReleaseFacts, LoadedField>,
    ]),
  );
}
