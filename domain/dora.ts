/**
 * DORA's four keys for a deployment (docs/behaviour.md "Delivery metrics"), over a window of days
 * ending now. A deployment is a release run that ended on a target: `succeeded` or `failed`.
 * - deployment frequency: successful releases, and per day;
 * - lead time for changes: from a version's creation to its release succeeding on a target;
 * - change failure rate: failed releases among those that ended (a rolled-back release failed first);
 * - time to restore: from a failure on a target to the next success there (failures not yet
 *   restored are counted apart).
 */

/** Longest window, in days: the figures are read from the releases that ended in it. */
export const MAX_DORA_WINDOW_DAYS = 365;
export const DEFAULT_DORA_WINDOW_DAYS = 30;

/** What the database sums for one environment, or for all of them. */
export interface DoraCounts {
  succeeded: number;
  failed: number;
  leadTimeP50: number | null;
  leadTimeP90: number | null;
  restoreP50: number | null;
  restoreP90: number | null;
  unrestored: number;
}

export interface DoraFigures {
  deployments: number;
  deploymentsPerDay: number;
  leadTimeSeconds: { p50: number | null; p90: number | null };
  failed: number;
  /** Failed of ended releases; null when none ended. */
  changeFailureRate: number | null;
  timeToRestoreSeconds: { p50: number | null; p90: number | null };
  unrestored: number;
}

const rounded = (value: number | null, digits = 3) =>
  value === null ? null : Math.round(value * 10 ** digits) / 10 ** digits;

/** The four keys from the sums of a window of `days`. */
export function doraFigures(counts: DoraCounts, days: number): DoraFigures {
  const ended = counts.succeeded + counts.failed;
  return {
    deployments: counts.succeeded,
    deploymentsPerDay: rounded(counts.succeeded / days)!,
    leadTimeSeconds: { p50: rounded(counts.leadTimeP50), p90: rounded(counts.leadTimeP90) },
    failed: counts.failed,
    changeFailureRate: ended === 0 ? null : rounded(counts.failed / ended, 4),
    timeToRestoreSeconds: { p50: rounded(counts.restoreP50), p90: rounded(counts.restoreP90) },
    unrestored: counts.unrestored,
  };
}
