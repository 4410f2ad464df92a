/**
 * Test-only fault injection (FLIGHTDECK_FAULT_INJECTION): named points where the API fails or dies on
 * purpose, so tests can prove that a crash at that moment loses nothing and leaves nothing behind.
 */
export const FAULTS = [
  /** The claim statement fails at run time, after it moved the job and before it commits. */
  'claim.fail-after-update',
  /** The API process dies (SIGKILL) right after a claim committed, before it answers. */
  'claim.exit-after-commit',
] as const;

export type Fault = (typeof FAULTS)[number];

export type Faults = ReadonlySet<Fault>;
