/**
 * Job statuses (docs/design.md "Decisions"): one canonical set on the wire and in the database. Inputs also accept
 * the legacy spellings (`completed`, `failed`) and camelCase (`inProgress`, `invalidJobAgent`, …).
 */
export const JOB_STATUSES = [
  'pending',
  'queued',
  'triggered',
  'in_progress',
  'action_required',
  'successful',
  'failure',
  'cancelled',
  'skipped',
  'invalid_job_agent',
  'invalid_integration',
  'external_run_not_found',
] as const;

export type JobStatus = (typeof JOB_STATUSES)[number];

export const TERMINAL_JOB_STATUSES: readonly JobStatus[] = [
  'successful',
  'failure',
  'cancelled',
  'skipped',
  'invalid_job_agent',
  'invalid_integration',
  'external_run_not_found',
];

export function isTerminalJobStatus(status: JobStatus): boolean {
  return TERMINAL_JOB_STATUSES.includes(status);
}

const ALIASES: Record<string, JobStatus> = { completed: 'successful', failed: 'failure' };

/** The canonical status for any accepted spelling, or undefined. */
export function normalizeJobStatus(input: string): JobStatus | undefined {
  const snake = input
    .trim()
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[-\s]+/g, '_')
    .toLowerCase();
  const status = ALIASES[snake] ?? snake;
  return (JOB_STATUSES as readonly string[]).includes(status) ? (status as JobStatus) : undefined;
}

/**
 * A job in one of these holds its release target: no other release may start a job there
 * (docs/design.md "Invariants" 2). `queued` counts; so does `triggered`, which is a push agent's run in
 * progress in its own system.
 */
export const ACTIVE_JOB_STATUSES: readonly JobStatus[] = [
  'pending',
  'queued',
  'triggered',
  'in_progress',
  'action_required',
];

export function isActiveJobStatus(status: JobStatus): boolean {
  return ACTIVE_JOB_STATUSES.includes(status);
}

const MOVES: Record<JobStatus, readonly JobStatus[]> = {
  pending: ['queued', 'triggered', 'in_progress', 'action_required', ...TERMINAL_JOB_STATUSES],
  queued: ['in_progress', 'action_required', ...TERMINAL_JOB_STATUSES],
  triggered: ['in_progress', 'action_required', ...TERMINAL_JOB_STATUSES],
  // Back to queued: a lease that expired, or the manual recovery of a V1 agent that died.
  in_progress: ['queued', 'action_required', ...TERMINAL_JOB_STATUSES],
  action_required: ['in_progress', ...TERMINAL_JOB_STATUSES],
  successful: [],
  failure: [],
  cancelled: [],
  skipped: [],
  invalid_job_agent: [],
  invalid_integration: [],
  external_run_not_found: [],
};

/** Whether a job may move between two statuses; reporting the status it already has is always fine. */
export function canMoveJob(from: JobStatus, to: JobStatus): boolean {
  return from === to || MOVES[from].includes(to);
}

/** The statuses a job may move to `to` from (not counting `to` itself): the move table read backwards. */
export function movesInto(to: JobStatus): JobStatus[] {
  return JOB_STATUSES.filter((from) => from !== to && MOVES[from].includes(to));
}
