import { latestStart, nextStart, parseRecurrence, RECURRENCE_LIMITS, recurrenceProblem } from './recurrence';
import { ruleTimerMs } from './ruleLimits';

/**
 * Deployment windows: an RFC 5545 rule gives the starts of windows in a time zone's wall-clock
 * time; each lasts `durationMinutes`. Rules are evaluated on "floating" dates (wall-clock fields
 * stored in a Date's UTC fields), so conversion to and from real instants happens here, per time
 * zone, daylight saving included.
 */

export interface WindowSpec {
  rrule: string;
  durationMinutes: number;
  timezone: string;
}

export interface WindowState {
  /** Whether `now` falls inside a window. */
  inside: boolean;
  /** When that changes: the end of the current window, or the start of the next one. */
  changesAt?: Date;
  /**
   * No window starts before `changesAt` as far as the rule was searched (10 years): that instant is
   * a fresh look at the rule, not an opening.
   */
  searchedUntil?: true;
  /** Why a stored rule could not be evaluated (written before today's limits); callers fail closed. */
  problem?: string;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock time of an instant in a time zone, as a floating Date. */
export function toWallClock(instant: Date, timeZone: string): Date {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timeZone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(instant).map((part) => [part.type, part.value]));
  return new Date(
    Date.UTC(
      Number(parts.year),
      Number(parts.month) - 1,
      Number(parts.day),
      Number(parts.hour),
      Number(parts.minute),
      Number(parts.second),
      instant.getUTCMilliseconds(),
    ),
  );
}

/** The instant at which a time zone's clocks show the given wall-clock time. */
export function fromWallClock(wall: Date, timeZone: string): Date {
  let guess = wall.getTime();
  // Two corrections settle the offset, also next to a daylight-saving change.
  for (let i = 0; i < 2; i++) guess += wall.getTime() - toWallClock(new Date(guess), timeZone).getTime();
  return new Date(guess);
}

/**
 * What is wrong with a window's rule and time zone, by field: an unparsable, too fine, too costly rule
 * or one that never starts again (domain/recurrence.ts), an unknown zone. `now` is the write's time.
 */
export function windowProblems(
  rrule: string,
  timeZone: string,
  fields: { rrule: string; timeZone: string },
  now: Date,
): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  let zone: string | undefined = timeZone;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
  } catch {
    problems.push({ path: fields.timeZone, message: `unknown IANA time zone "${timeZone}"` });
    zone = undefined;
  }
  const problem = recurrenceProblem(rrule, toWallClock(now, zone ?? 'UTC').getTime());
  if (problem) problems.push({ path: fields.rrule, message: problem });
  return problems;
}

/**
 * Whether `now` is inside a window and when that changes. Bounded: a window's start is looked for
 * back as far as the window lasts and ahead 10 years (domain/recurrence.ts), so a rule that never
 * starts costs milliseconds, in a request or a workflow task alike.
 */
export function windowState(spec: WindowSpec, now: Date): WindowState {
  // A duration stored before rules had maxima would put the window's end past the last valid date.
  const durationMs = ruleTimerMs(spec.durationMinutes * 60);
  try {
    const rule = parseRecurrence(spec.rrule);
    const wallNow = toWallClock(now, spec.timezone).getTime();
    const latest = latestStart(rule, wallNow, wallNow - durationMs);
    if (latest !== undefined && latest + durationMs > wallNow) {
      return { inside: true, changesAt: fromWallClock(new Date(latest + durationMs), spec.timezone) };
    }
    const searchedUntil = wallNow + RECURRENCE_LIMITS.horizonMs;
    const next = nextStart(rule, wallNow, searchedUntil);
    if (next.at !== undefined)
      return { inside: false, changesAt: fromWallClock(new Date(next.at), spec.timezone) };
    if (next.ended) return { inside: false };
    return {
      inside: false,
      changesAt: fromWallClock(new Date(searchedUntil), spec.timezone),
      searchedUntil: true,
    };
  } catch (error) {
    return { inside: false, problem: (error as Error).message };
  }
}
