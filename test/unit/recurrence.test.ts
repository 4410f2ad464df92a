import { RRule } from 'rrule';
import {
  latestStart,
  nextStart,
  parseRecurrence,
  RecurrenceBudgetExceeded,
  recurrenceProblem,
  type Recurrence,
} from '../../domain/recurrence';

const DAY = 86_400_000;
const at = (iso: string) => Date.parse(iso);
const now = at('2026-12-02T00:00:00Z');

/** Every start in [from, to], by repeated `nextStart`. */
function startsBetween(rule: Recurrence, from: number, to: number): number[] {
  const starts: number[] = [];
  for (let after = from - 1; ;) {
    const { at: next } = nextStart(rule, after, to);
    if (next === undefined) return starts;
    starts.push(next);
    after = next;
  }
}

/** A small deterministic generator, so a failing rule can be found again from its seed. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const some = <T>(values: readonly T[], most: number): T[] => {
    const chosen = new Set<T>();
    const count = int(1, most);
    while (chosen.size < count) chosen.add(values[int(0, values.length - 1)] as T);
    return [...chosen];
  };
  return { next, int, some };
}

const WEEKDAYS = ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'] as const;
const sortedNumbers = (values: number[]) => [...values].sort((a, b) => a - b).join(',');

/** A rule that starts often enough for the rule library to answer at once (it searches to 9999 otherwise). */
function randomRule(seed: number): string {
  const g = generator(seed);
  const freq = (['YEARLY', 'MONTHLY', 'WEEKLY', 'DAILY', 'HOURLY'] as const)[g.int(0, 4)];
  const start = new Date(at('2024-01-01T00:00:00Z') + g.int(0, 900) * DAY + g.int(0, 23) * 3_600_000);
  const stamp = start.toISOString().replace(/[-:]/g, '').slice(0, 15);
  const parts = [`FREQ=${freq}`];
  if (g.next() < 0.5) parts.push(`INTERVAL=${g.int(2, 3)}`);
  if (g.next() < 0.3) parts.push(`WKST=${WEEKDAYS[g.int(0, 6)]}`);
  const nth = (freq === 'MONTHLY' || freq === 'YEARLY') && g.next() < 0.4;
  if (g.next() < 0.6) {
    const days = g.some(WEEKDAYS, 4).map((day) => (nth ? `${[1, 2, -1][g.int(0, 2)]}${day}` : day));
    parts.push(`BYDAY=${days.join(',')}`);
  } else if (freq !== 'WEEKLY' && g.next() < 0.5) {
    parts.push(`BYMONTHDAY=${g.some([1, 2, 10, 15, 28, -1, -2], 3).join(',')}`);
  }
  if (freq !== 'YEARLY' && g.next() < 0.3)
    parts.push(`BYMONTH=${sortedNumbers(g.some([1, 3, 5, 7, 9, 11, 12], 4))}`);
  if (freq === 'YEARLY' && g.next() < 0.3)
    parts.push(`BYYEARDAY=${g.some([1, 50, 100, 200, -1, -30], 3).join(',')}`);
  if (g.next() < 0.6) parts.push(`BYHOUR=${sortedNumbers(g.some([0, 6, 9, 13, 17, 22], 3))}`);
  if (g.next() < 0.5) parts.push(`BYMINUTE=${sortedNumbers(g.some([0, 15, 30, 45], 2))}`);
  const setPositions = g.next() < 0.25;
  if (setPositions) parts.push(`BYSETPOS=${g.some([1, 2, -1], 2).join(',')}`);
  const ending = g.next();
  // Not with BYSETPOS: the library counts a start twice when two positions choose it.
  if (ending < 0.2 && !setPositions) parts.push(`COUNT=${g.int(1, 40)}`);
  else if (ending < 0.35) parts.push(`UNTIL=${stamp.slice(0, 4) === '2026' ? '2027' : '2026'}0615T000000Z`);
  return `DTSTART:${stamp}Z\nRRULE:${parts.join(';')}`;
}

describe('recurrence rules', () => {
  it('agrees with the rule library on every start of two years, for 300 generated rules', () => {
    const from = at('2025-01-01T00:00:00Z');
    const to = at('2026-12-31T00:00:00Z');
    let compared = 0;
    for (let seed = 1; compared < 300; seed++) {
      const text = randomRule(seed);
      const ours = parseRecurrence(text);
      // Only rules that start again after the range: the library walks to 9999 looking for one otherwise.
      if (startsBetween(ours, to, to + 400 * DAY).length === 0) continue;
      const options = RRule.parseString(text);
      // The library repeats a start that two BYSETPOS positions choose; a rule's starts are a set.
      const library = [
        ...new Set(
          new RRule({ ...options, tzid: null })
            .between(new Date(from), new Date(to), true)
            .map((date) => date.getTime()),
        ),
      ];
      expect({ text, starts: startsBetween(ours, from, to) }).toEqual({ text, starts: library });
      for (const probe of [from + 70 * DAY + 3_600_000, from + 300 * DAY, to - 7 * DAY]) {
        const expected = library.filter((start) => start <= probe && start >= probe - 60 * DAY).at(-1);
        expect({ text, probe, latest: latestStart(ours, probe, probe - 60 * DAY) }).toEqual({
          text,
          probe,
          latest: expected,
        });
      }
      compared++;
    }
  });

  it('answers a rule that never starts at once, and refuses it at write', () => {
    const rule = parseRecurrence('FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31');
    const began = performance.now();
    expect(nextStart(rule, now, now + 3653 * DAY)).toEqual({ ended: false });
    expect(latestStart(rule, now, now - 366 * DAY)).toBeUndefined();
    expect(performance.now() - began).toBeLessThan(1000);
    expect(recurrenceProblem('FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31', now)).toBe(
      'the rule has no start in the next 10 years',
    );
  });

  it('reads an hourly rule from 1990 without walking its 36 years', () => {
    const rule = parseRecurrence('DTSTART:19900101T000000Z\nRRULE:FREQ=HOURLY');
    expect(nextStart(rule, now, now + 3653 * DAY)).toEqual({ at: now + 3_600_000, ended: false });
    expect(latestStart(rule, now + 1000, now - DAY)).toBe(now);
    expect(recurrenceProblem('DTSTART:19900101T000000Z\nRRULE:FREQ=HOURLY', now)).toBeUndefined();
  });

  it('finds a leap day years away, and says when a rule has ended', () => {
    const leapDay = parseRecurrence('DTSTART:20240101T090000Z\nRRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29');
    expect(nextStart(leapDay, now, now + 3653 * DAY)).toEqual({
      at: at('2028-02-29T09:00:00Z'),
      ended: false,
    });
    const counted = parseRecurrence('DTSTART:20261101T000000Z\nRRULE:FREQ=DAILY;COUNT=3');
    expect(nextStart(counted, at('2026-11-02T12:00:00Z'), now + DAY)).toEqual({
      at: at('2026-11-03T00:00:00Z'),
      ended: false,
    });
    expect(nextStart(counted, at('2026-11-03T12:00:00Z'), now + DAY)).toEqual({ ended: true });
    expect(recurrenceProblem('DTSTART:20261101T000000Z\nRRULE:FREQ=DAILY;COUNT=3', now)).toBe(
      'the rule has no start after now (UNTIL or COUNT has passed)',
    );
  });

  it('stops a stored rule past its budget instead of running on', () => {
    // Not writable (COUNT over its maximum), but a rule stored before the limits could be anything.
    const dense = parseRecurrence(
      `DTSTART:19700101T000000Z\nRRULE:FREQ=HOURLY;COUNT=900000000;BYMINUTE=${[...Array(60).keys()].join(',')}`,
    );
    expect(() => nextStart(dense, now, now + DAY)).toThrow(RecurrenceBudgetExceeded);
  });

  it.each([
    ['FREQ=MINUTELY', 'FREQ must be HOURLY or coarser'],
    ['DTSTART:19650101T000000Z\nRRULE:FREQ=DAILY', 'DTSTART must be in 1970 or later'],
    ['DTSTART:20500101T000000Z\nRRULE:FREQ=DAILY', 'DTSTART must be within 10 years from now'],
    ['FREQ=DAILY;COUNT=20000', 'COUNT must be at most 10000'],
    ['FREQ=YEARLY;BYWEEKNO=20', 'not an RFC 5545 rule: BYWEEKNO is not supported'],
    [
      `FREQ=DAILY;BYHOUR=${[...Array(24).keys()].join(',')};BYMINUTE=${[...Array(60).keys()].join(',')};BYSECOND=0,30`,
      'the rule starts more than 1440 windows a day',
    ],
    ['FREQ=DAILY;UNTIL=20200101T000000Z', 'the rule has no start after now (UNTIL or COUNT has passed)'],
  ])('refuses %j at write', (text, problem) => {
    expect(recurrenceProblem(text, now)).toBe(problem);
  });
});
