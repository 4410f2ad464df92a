/**
 * Where a release is in its life. A release has no status field: its state is its target's
 * (docs/behaviour.md "Release"). This phase is the orchestration's own bookkeeping, shown with the
 * release's evaluation.
 */
export const RELEASE_PHASES = [
  'pending',
  'running',
  'succeeded',
  'failed',
  'cancelled',
  'superseded',
] as const;
export type ReleasePhase = (typeof RELEASE_PHASES)[number];

export const TERMINAL_RELEASE_PHASES: readonly ReleasePhase[] = [
  'succeeded',
  'failed',
  'cancelled',
  'superseded',
];

export function isTerminalReleasePhase(phase: ReleasePhase): boolean {
  return TERMINAL_RELEASE_PHASES.includes(phase);
}
