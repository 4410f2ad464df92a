import { Frequency, RRule } from 'rrule';
import { ruleTimerMs } from './ruleLimits';

/**
 * Deployment windows: an RFC 5545 rule gives the starts of windows in a time zone's wall-clock
 * time; each lasts `durationMinutes`. The rule library works on "floating" dates (wall-clock fields
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
}

/** Rules without a DTSTART count from here (a Monday), in the window's time zone. */
const DEFAULT_START = Date.UTC(2024, 0, 1);

/** Frequencies a window may use; finer ones would make every evaluation walk millions of occurrences. */
export const WINDOW_FREQUENCIES: readonly Frequency[] = [
  Frequency.HOURLY,
  Frequency.DAILY,
  Frequency.WEEKLY,
  Frequency.MONTHLY,
  Frequency.YEARLY,
];

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

/** What is wrong with a window's rule and time zone, by field: an unparsable or too fine rule, an unknown zone. */
export function windowProblems(
  rrule: string,
  timeZone: string,
  fields: { rrule: string; timeZone: string },
): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  try {
    if (!WINDOW_FREQUENCIES.includes(parseWindowRule(rrule).options.freq)) {
      problems.push({ path: fields.rrule, message: 'FREQ must be HOURLY or coarser' });
    }
  } catch (error) {
    problems.push({ path: fields.rrule, message: `not an RFC 5545 rule: ${(error as Error).message}` });
  }
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
  } catch {
    problems.push({ path: fields.timeZone, message: `unknown IANA time zone "${timeZone}"` });
  }
  return problems;
}

export function parseWindowRule(rrule: string): RRule {
  const options = RRule.parseString(rrule);
  return new RRule({ ...options, tzid: null, dtstart: options.dtstart ?? new Date(DEFAULT_START) });
}

export function windowState(spec: WindowSpec, now: Date): WindowState {
  const rule = parseWindowRule(spec.rrule);
  // A duration stored before rules had maxima would put the window's end past the last valid date.
  const durationMs = ruleTimerMs(spec.durationMinutes * 60);
  const wallNow = toWallClock(now, spec.timezone);
  const latest = rule.before(wallNow, true);
  if (latest && latest.getTime() + durationMs > wallNow.getTime()) {
    return { inside: true, changesAt: fromWallClock(new Date(latest.getTime() + durationMs), spec.timezone) };
  }
  const next = rule.after(wallNow, false);
  return { inside: false, changesAt: next ? fromWallClock(next, spec.timezone) : undefined };
}
