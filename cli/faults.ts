import type { Stores } from '../application';

/**
 * Test-only fault injection (FLIGHTDECK_FAULT_INJECTION): named moments where the API dies on
 * purpose, so tests can prove that a crash then loses nothing and leaves nothing behind. A fault
 * wraps the stores the API hands each request; production code has no fault branch of its own.
 */
export const FAULTS = [
  /** The API process dies (SIGKILL) right after a claim committed, before it answers. */
  'claim.exit-after-commit',
] as const;

export type Fault = (typeof FAULTS)[number];

export type Faults = ReadonlySet<Fault>;

/** The stores of a request with the faults in place, or undefined when there are none. */
export function storesWithFaults(faults: Faults): ((stores: Stores) => Stores) | undefined {
  if (!faults.has('claim.exit-after-commit')) return undefined;
  return (stores) => {
    const { pull } = stores;
    const claim = pull.claim.bind(pull);
    pull.claim = async (...args) => {
      await claim(...args);
      process.kill(process.pid, 'SIGKILL');
      throw new Error('unreachable: the process was killed');
    };
    return stores;
  };
}
