/** Version status (docs/behaviour.md "Version status"): only `ready` versions get releases and jobs. */
export const VERSION_STATUSES = ['building', 'ready', 'failed'] as const;
export type VersionStatus = (typeof VERSION_STATUSES)[number];

export const ROLLOUT_STATUSES = ['pending', 'running', 'completed'] as const;
export type RolloutStatus = (typeof ROLLOUT_STATUSES)[number];

const ALLOWED_MOVES: Record<VersionStatus, readonly VersionStatus[]> = {
  building: ['ready', 'failed'],
  ready: ['failed'],
  failed: [],
};

/** Whether a version may move between two statuses; staying put is always allowed. */
export function canMoveVersion(from: VersionStatus, to: VersionStatus): boolean {
  return from === to || ALLOWED_MOVES[from].includes(to);
}

/** A move that makes a version eligible for releases, whether at creation or by update. */
export function becomesReady(from: VersionStatus | undefined, to: VersionStatus): boolean {
  return to === 'ready' && from !== 'ready';
}
