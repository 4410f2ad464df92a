import { Frequency, RRule } from 'rrule';

/**
 * RFC 5545 recurrence rules, evaluated with a bound on the work (docs/behaviour.md "Holds and
 * freezes", docs/security.md "Recurrence rules"). The rule library parses rules and fills in the parts a rule
 * leaves to its DTSTART; it does not evaluate them here, because its search walks every period up to
 * the year 9999 when a rule never matches (a February 31st took 80 s). This evaluator walks the
 * periods (a year, a month, a week, a day) between two instants only, counts every day it looks at
 * and every start it produces, and stops with `RecurrenceBudgetExceeded` past its budget. The count
 * depends only on the rule and the instants, so a workflow that evaluates a rule replays it exactly.
 *
 * Times are "floating": wall-clock fields held in a Date's UTC fields (domain/windows.ts converts).
 */

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/** The frequencies a rule may use; finer ones would start a window every minute or second. */
const RECURRENCE_FREQUENCIES: readonly Frequency[] = [
  Frequency.HOURLY,
  Frequency.DAILY,
  Frequency.WEEKLY,
  Frequency.MONTHLY,
  Frequency.YEARLY,
];

export const RECURRENCE_LIMITS = {
  /** How far ahead a rule is searched for its next start: a rule's next start is looked for up to 10 years on. */
  horizonMs: 3653 * DAY_MS,
  /** Days looked at plus starts produced by one evaluation (tens of milliseconds at most). */
  budget: 100_000,
  /** DTSTART no earlier than this (a COUNT rule is walked from its DTSTART). */
  earliestStart: Date.UTC(1970, 0, 1),
  /** Starts a day (BYHOUR × BYMINUTE × BYSECOND). */
  startsPerDay: 1440,
  /** COUNT at most this. */
  count: 10_000,
  /** Candidates of one period a BYSETPOS chooses from. */
  setPosCandidates: 10_000,
} as const;

/** Rules without a DTSTART count from here (a Monday), in the window's time zone. */
const DEFAULT_START = Date.UTC(2024, 0, 1);

export class RecurrenceBudgetExceeded extends Error {
  constructor() {
    super(`evaluating the rule took more than ${RECURRENCE_LIMITS.budget} steps`);
    this.name = 'RecurrenceBudgetExceeded';
  }
}

/** A parsed rule, every implicit part made explicit. */
export interface Recurrence {
  freq: Frequency;
  interval: number;
  /** Floating milliseconds. */
  start: number;
  until?: number;
  count?: number;
  /** Monday = 0. */
  weekStart: number;
  months?: readonly number[];
  weekdays?: readonly number[];
  /** [weekday, n]: the nth such weekday of the month (or year), n < 0 from the end. */
  nthWeekdays?: readonly (readonly [number, number])[];
  monthDays: readonly number[];
  monthDaysFromEnd: readonly number[];
  yearDays?: readonly number[];
  setPositions?: readonly number[];
  /** HOURLY: the hours a start may fall in (absent: any). */
  hours?: readonly number[];
  /** Sorted offsets of the starts within their day (coarser than HOURLY) or within their hour (HOURLY). */
  offsets: readonly number[];
}

/** Parses a rule as the rule library reads it; throws on text that is not a rule. */
export function parseRecurrence(text: string): Recurrence {
  const parsed = RRule.parseString(text);
  for (const part of ['byweekno', 'byeaster'] as const) {
    if (parsed[part] !== undefined && parsed[part] !== null) {
      throw new Error(`${part === 'byweekno' ? 'BYWEEKNO' : 'BYEASTER'} is not supported`);
    }
  }
  const o = new RRule({ ...parsed, tzid: null, dtstart: parsed.dtstart ?? new Date(DEFAULT_START) }).options;
  const nonEmpty = <T>(list: T[] | null | undefined) => (list && list.length > 0 ? list : undefined);
  const sorted = (list: number[]) => [...new Set(list)].sort((a, b) => a - b);
  const hours = o.freq === Frequency.HOURLY ? nonEmpty(o.byhour) : (o.byhour ?? []);
  const offsets: number[] = [];
  for (const hour of o.freq === Frequency.HOURLY ? [0] : (hours ?? []))
    for (const minute of o.byminute ?? [])
      for (const second of o.bysecond ?? []) offsets.push(hour * HOUR_MS + minute * 60_000 + second * 1000);
  return {
    freq: o.freq,
    interval: o.interval,
    start: o.dtstart.getTime(),
    ...(o.until ? { until: o.until.getTime() } : {}),
    ...(o.count ? { count: o.count } : {}),
    weekStart: typeof o.wkst === 'number' ? o.wkst : 0,
    months: nonEmpty(o.bymonth),
    weekdays: nonEmpty(o.byweekday as number[] | null),
    nthWeekdays: nonEmpty(o.bynweekday as [number, number][] | null),
    monthDays: o.bymonthday ?? [],
    monthDaysFromEnd: o.bynmonthday ?? [],
    yearDays: nonEmpty(o.byyearday),
    setPositions: nonEmpty(o.bysetpos),
    ...(o.freq === Frequency.HOURLY && hours ? { hours: sorted(hours) } : {}),
    offsets: sorted(offsets),
  };
}

/** Counts steps against the budget. */
class Steps {
  private spent = 0;
  spend(steps: number): void {
    this.spent += steps;
    if (this.spent > RECURRENCE_LIMITS.budget) throw new RecurrenceBudgetExceeded();
  }
}

// ---- the calendar, by day number (days since 1970-01-01, a Thursday) ----

const dayOf = (ms: number) => Math.floor(ms / DAY_MS);
const mod = (a: number, n: number) => ((a % n) + n) % n;
/** Monday = 0. */
const weekdayOf = (day: number) => mod(day + 3, 7);
const civil = (day: number) => {
  const date = new Date(day * DAY_MS);
  return { year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, date: date.getUTCDate() };
};
const dayNumber = (year: number, month: number, date = 1) => dayOf(Date.UTC(year, month - 1, date));

/**
 * A period of the rule's frequency, numbered from the one that holds DTSTART: HOURLY rules walk
 * days and choose their hours inside a day.
 */
interface Periods {
  /** The period holding a day, counted from DTSTART's. */
  indexOf(day: number): number;
  /** Its days: [first, end). */
  days(index: number): [number, number];
}

function periodsOf(rule: Recurrence): Periods {
  const first = civil(dayOf(rule.start));
  switch (rule.freq) {
    case Frequency.YEARLY:
      return {
        indexOf: (day) => civil(day).year - first.year,
        days: (i) => [dayNumber(first.year + i, 1), dayNumber(first.year + i + 1, 1)],
      };
    case Frequency.MONTHLY: {
      const base = first.year * 12 + first.month - 1;
      const monthStart = (m: number) => dayNumber(Math.floor(m / 12), mod(m, 12) + 1);
      return {
        indexOf: (day) => {
          const { year, month } = civil(day);
          return year * 12 + month - 1 - base;
        },
        days: (i) => [monthStart(base + i), monthStart(base + i + 1)],
      };
    }
    case Frequency.WEEKLY: {
      const weekOf = (day: number) => day - mod(weekdayOf(day) - rule.weekStart, 7);
      const base = weekOf(dayOf(rule.start));
      return {
        indexOf: (day) => (weekOf(day) - base) / 7,
        // The first week starts on DTSTART's day, as the rule library counts it (BYSETPOS sees it so).
        days: (i) => [i === 0 ? dayOf(rule.start) : base + 7 * i, base + 7 * i + 7],
      };
    }
    default: {
      const base = dayOf(rule.start);
      return { indexOf: (day) => day - base, days: (i) => [base + i, base + i + 1] };
    }
  }
}

/** Whether a day of a period passes the rule's day parts (BYMONTH, BYDAY, BYMONTHDAY, BYYEARDAY). */
function dayMatches(rule: Recurrence, day: number): boolean {
  const { year, month, date } = civil(day);
  if (rule.months && !rule.months.includes(month)) return false;
  const weekday = weekdayOf(day);
  if (rule.weekdays && !rule.weekdays.includes(weekday)) return false;
  if (rule.monthDays.length > 0 || rule.monthDaysFromEnd.length > 0) {
    const daysInMonth = dayNumber(year, month + 1) - dayNumber(year, month);
    if (!rule.monthDays.includes(date) && !rule.monthDaysFromEnd.includes(date - daysInMonth - 1))
      return false;
  }
  if (rule.yearDays) {
    const dayOfYear = day - dayNumber(year, 1) + 1;
    const yearLength = dayNumber(year + 1, 1) - dayNumber(year, 1);
    if (!rule.yearDays.includes(dayOfYear) && !rule.yearDays.includes(dayOfYear - yearLength - 1))
      return false;
  }
  if (rule.nthWeekdays) {
    // The nth weekday counts within the month, or the year for a YEARLY rule without BYMONTH.
    const [first, end] =
      rule.freq === Frequency.YEARLY && !rule.months
        ? [dayNumber(year, 1), dayNumber(year + 1, 1)]
        : [dayNumber(year, month), dayNumber(year, month + 1)];
    const last = end - 1;
    const hit = rule.nthWeekdays.some(([wanted, n]) =>
      n > 0
        ? first + (n - 1) * 7 + mod(wanted - weekdayOf(first), 7) === day
        : last + (n + 1) * 7 - mod(weekdayOf(last) - wanted, 7) === day,
    );
    if (!hit) return false;
  }
  return true;
}

/** The starts of one day of a period, sorted, before DTSTART, UNTIL and BYSETPOS apply. */
function startsOfDay(rule: Recurrence, day: number): number[] {
  const dayStart = day * DAY_MS;
  if (rule.freq !== Frequency.HOURLY) return rule.offsets.map((offset) => dayStart + offset);
  const starts: number[] = [];
  const firstHour = Math.floor(rule.start / HOUR_MS);
  for (let hour = 0; hour < 24; hour++) {
    if (mod(day * 24 + hour - firstHour, rule.interval) !== 0) continue;
    if (rule.hours && !rule.hours.includes(hour)) continue;
    for (const offset of rule.offsets) starts.push(dayStart + hour * HOUR_MS + offset);
  }
  return starts;
}

/** Chooses BYSETPOS's positions from a set of candidates (sorted). */
function choosePositions(candidates: number[], positions: readonly number[]): number[] {
  const chosen = new Set<number>();
  for (const position of positions) {
    const at = position > 0 ? candidates[position - 1] : candidates[candidates.length + position];
    if (at !== undefined) chosen.add(at);
  }
  return [...chosen].sort((a, b) => a - b);
}

/** The starts of a period (sorted), BYSETPOS, DTSTART and UNTIL applied. */
function periodStarts(rule: Recurrence, index: number, periods: Periods, steps: Steps): number[] {
  const [first, end] = periods.days(index);
  steps.spend(end - first);
  let starts: number[] = [];
  for (let day = first; day < end; day++) {
    if (!dayMatches(rule, day)) continue;
    starts.push(...startsOfDay(rule, day));
  }
  steps.spend(starts.length);
  const positions = rule.setPositions;
  if (positions) {
    if (rule.freq === Frequency.HOURLY) {
      const byHour = new Map<number, number[]>();
      for (const start of starts) {
        const hour = Math.floor(start / HOUR_MS);
        byHour.set(hour, [...(byHour.get(hour) ?? []), start]);
      }
      starts = [...byHour.values()].flatMap((group) => choosePositions(group, positions));
    } else {
      starts = choosePositions(starts, positions);
    }
  }
  return starts.filter((start) => start >= rule.start && (rule.until === undefined || start <= rule.until));
}

/**
 * Periods that are aligned to INTERVAL, from the one holding `fromDay` on (or back), until `visit`
 * says stop. HOURLY rules align inside a day, so every day is a period of theirs.
 */
function walk(
  rule: Recurrence,
  fromDay: number,
  direction: 1 | -1,
  steps: Steps,
  visit: (starts: number[], days: [number, number]) => boolean,
): void {
  const periods = periodsOf(rule);
  const step = rule.freq === Frequency.HOURLY ? 1 : rule.interval;
  let index = periods.indexOf(Math.max(fromDay, dayOf(rule.start)));
  const offset = mod(index, step);
  if (offset !== 0) index += direction > 0 ? step - offset : -offset;
  for (; index >= 0; index += direction * step) {
    steps.spend(1);
    if (!visit(periodStarts(rule, index, periods, steps), periods.days(index))) return;
  }
}

/** The answer of a search: a start, or none before the limit (and whether the rule has ended). */
export interface RecurrenceAnswer {
  at?: number;
  /** No start after this one will ever come (UNTIL or COUNT reached). */
  ended: boolean;
}

/** The first start after `after` and no later than `limit`. */
export function nextStart(rule: Recurrence, after: number, limit: number): RecurrenceAnswer {
  const steps = new Steps();
  let answer: RecurrenceAnswer = { ended: false };
  if (rule.until !== undefined && rule.until <= after) return { ended: true };
  let seen = 0;
  // A COUNT rule counts its starts from DTSTART, so its walk begins there.
  const fromDay = rule.count ? dayOf(rule.start) : dayOf(after);
  walk(rule, fromDay, 1, steps, (starts, [first]) => {
    if (first * DAY_MS > limit) return false;
    for (const start of starts) {
      if (rule.count && ++seen > rule.count) {
        answer = { ended: true };
        return false;
      }
      if (start > limit) return false;
      if (start > after) {
        answer = { at: start, ended: false };
        return false;
      }
    }
    if (rule.until !== undefined && first * DAY_MS > rule.until) {
      answer = { ended: true };
      return false;
    }
    return true;
  });
  if (answer.at === undefined && rule.count && seen >= rule.count) answer = { ended: true };
  return answer;
}

/** The last start at or before `at` and no earlier than `notBefore`. */
export function latestStart(rule: Recurrence, at: number, notBefore: number): number | undefined {
  const steps = new Steps();
  let latest: number | undefined;
  if (rule.count) {
    let seen = 0;
    walk(rule, dayOf(rule.start), 1, steps, (starts, [first]) => {
      if (first * DAY_MS > at) return false;
      for (const start of starts) {
        if (++seen > rule.count! || start > at) return false;
        latest = start;
      }
      return true;
    });
    return latest !== undefined && latest >= notBefore ? latest : undefined;
  }
  walk(rule, dayOf(at), -1, steps, (starts, [, end]) => {
    if (end * DAY_MS <= notBefore) return false;
    latest = starts.filter((start) => start <= at).at(-1);
    return latest === undefined;
  });
  return latest !== undefined && latest >= notBefore ? latest : undefined;
}

/** Why a rule would be refused at write (`now` floating in the rule's zone), or nothing. */
export function recurrenceProblem(text: string, now: number): string | undefined {
  let rule: Recurrence;
  try {
    rule = parseRecurrence(text);
  } catch (error) {
    return `not an RFC 5545 rule: ${(error as Error).message}`;
  }
  if (!RECURRENCE_FREQUENCIES.includes(rule.freq)) return 'FREQ must be HOURLY or coarser';
  const horizon = now + RECURRENCE_LIMITS.horizonMs;
  if (rule.start < RECURRENCE_LIMITS.earliestStart) return 'DTSTART must be in 1970 or later';
  if (rule.start > horizon) return 'DTSTART must be within 10 years from now';
  if (rule.count !== undefined && rule.count > RECURRENCE_LIMITS.count) {
    return `COUNT must be at most ${RECURRENCE_LIMITS.count}`;
  }
  const perDay = rule.freq === Frequency.HOURLY ? 24 * rule.offsets.length : rule.offsets.length;
  if (perDay > RECURRENCE_LIMITS.startsPerDay) {
    return `the rule starts more than ${RECURRENCE_LIMITS.startsPerDay} windows a day`;
  }
  const periodDays =
    new Map([
      [Frequency.YEARLY, 366],
      [Frequency.MONTHLY, 31],
      [Frequency.WEEKLY, 7],
    ]).get(rule.freq) ?? 1;
  if (rule.setPositions && periodDays * rule.offsets.length > RECURRENCE_LIMITS.setPosCandidates) {
    return `BYSETPOS may choose among at most ${RECURRENCE_LIMITS.setPosCandidates} starts of a period`;
  }
  try {
    const next = nextStart(rule, now, horizon);
    if (next.at === undefined) {
      return next.ended
        ? 'the rule has no start after now (UNTIL or COUNT has passed)'
        : 'the rule has no start in the next 10 years';
    }
    latestStart(rule, now, now - 366 * DAY_MS);
  } catch (error) {
    if (error instanceof RecurrenceBudgetExceeded)
      return `the rule is too costly to evaluate: ${error.message}`;
    throw error;
  }
  return undefined;
}
