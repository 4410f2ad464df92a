import { ValidationError } from './errors';
import { windowState } from './windows';

/**
 * Holds (docs/behaviour.md "Holds and freezes"): one primitive for "stop" and "stay". A hold covers
 * the release targets its CEL selector matches. `block`: no new job starts there and queued jobs are
 * kept from agents; `pin`: the targets converge to one version and no other starts there. A block
 * with a schedule is a freeze: in force only inside its windows. A hold ends when it expires or is
 * deleted; a policy skip whose rule id is the hold's id lets one version past it (break-glass).
 */

export type HoldEffect = 'block' | 'pin';

/**
 * Unexpired holds a workspace may have at once: every release's gates match each one's selector
 * against its target, so their number is bounded like policies'.
 */
export const MAX_HOLDS_PER_WORKSPACE = 100;

/** A freeze's windows: an RFC 5545 rule of window starts in a time zone, each lasting `durationSeconds`. */
export interface HoldSchedule {
  rrule: string;
  durationSeconds: number;
  timeZone: string;
}

/** A hold as a release's gates read it (recorded in the release workflow's history). */
export interface HoldFact {
  id: string;
  effect: HoldEffect;
  /** A pin's version. */
  version?: { id: string; tag: string };
  reason: string;
  expiresAt?: string;
  schedule?: HoldSchedule;
  createdBy: { id: string; name: string };
}

export interface HoldState {
  /** Whether the hold acts now. */
  inForce: boolean;
  /** When that changes by itself: it expires, or a freeze window opens or closes. */
  changesAt?: Date;
}

const earlier = (a: Date | undefined, b: Date | undefined) =>
  a === undefined ? b : b === undefined ? a : a.getTime() <= b.getTime() ? a : b;

/** Whether a hold is in force at `now`, and when that changes without anyone acting. */
export function holdState(hold: Pick<HoldFact, 'expiresAt' | 'schedule'>, now: Date): HoldState {
  const expiry = hold.expiresAt === undefined ? undefined : new Date(hold.expiresAt);
  if (expiry && expiry.getTime() <= now.getTime()) return { inForce: false };
  if (!hold.schedule) return { inForce: true, ...(expiry ? { changesAt: expiry } : {}) };
  const { rrule, durationSeconds, timeZone } = hold.schedule;
  const window = windowState({ rrule, durationMinutes: durationSeconds / 60, timezone: timeZone }, now);
  // A stored schedule that cannot be evaluated keeps its freeze in force until the hold ends.
  if (window.problem) return { inForce: true, ...(expiry ? { changesAt: expiry } : {}) };
  const changesAt = window.inside
    ? earlier(window.changesAt, expiry)
    : window.changesAt && (!expiry || window.changesAt < expiry)
      ? window.changesAt
      : undefined;
  return { inForce: window.inside, ...(changesAt ? { changesAt } : {}) };
}

/** A hold's expiry as asked: absent (until deleted) or in the future (400 otherwise). */
export function holdExpiry(requested: string | undefined, now: Date): Date | null {
  if (requested === undefined) return null;
  const at = new Date(requested);
  if (at.getTime() > now.getTime()) return at;
  throw new ValidationError('expiresAt must be in the future', [
    { path: 'body.expiresAt', message: 'must be in the future' },
  ]);
}

/** Who holds, and until when: "by <key> until <time>: <reason>". */
export function holdAttribution(hold: HoldFact, state: HoldState): string {
  const until = state.changesAt ? `until ${state.changesAt.toISOString()}` : 'until deleted';
  return `by ${hold.createdBy.name} ${until}: ${hold.reason}`;
}

/** The version a pin in force holds this target to, if any: the newest pin's, when pins overlap. */
export function pinnedVersion(holds: readonly HoldFact[] | undefined, now: Date): HoldFact['version'] {
  return (holds ?? []).filter((hold) => hold.effect === 'pin' && holdState(hold, now).inForce).at(-1)
    ?.version;
}
