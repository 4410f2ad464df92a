import { fromWallClock, toWallClock, windowState } from '../../domain/windows';

const at = (iso: string) => new Date(iso);

describe('deployment windows', () => {
  it('converts between instants and wall-clock time across daylight saving', () => {
    // New York is UTC-5 in January and UTC-4 in July.
    expect(toWallClock(at('2026-01-15T14:00:00Z'), 'America/New_York').toISOString()).toBe(
      '2026-01-15T09:00:00.000Z',
    );
    expect(toWallClock(at('2026-07-15T13:00:00Z'), 'America/New_York').toISOString()).toBe(
      '2026-07-15T09:00:00.000Z',
    );
    expect(fromWallClock(at('2026-07-15T09:00:00Z'), 'America/New_York').toISOString()).toBe(
      '2026-07-15T13:00:00.000Z',
    );
    expect(fromWallClock(at('2026-01-15T09:00:00Z'), 'Asia/Tokyo').toISOString()).toBe(
      '2026-01-15T00:00:00.000Z',
    );
  });

  const weekdayMornings = {
    rrule: 'FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=9;BYMINUTE=0;BYSECOND=0',
    durationMinutes: 120,
  };

  it('is inside a window during it, and says when it ends', () => {
    // Thursday 2026-11-19, 10:30 in Berlin (UTC+1).
    const state = windowState({ ...weekdayMornings, timezone: 'Europe/Berlin' }, at('2026-11-19T09:30:00Z'));
    expect(state).toEqual({ inside: true, changesAt: at('2026-11-19T10:00:00Z') });
  });

  it('is outside between windows, and says when the next one starts', () => {
    // Friday 12:00 in Berlin: the next window is Monday 09:00 Berlin time.
    const state = windowState({ ...weekdayMornings, timezone: 'Europe/Berlin' }, at('2026-11-20T11:00:00Z'));
    expect(state).toEqual({ inside: false, changesAt: at('2026-11-23T08:00:00Z') });
  });

  it('reads the rule in the window time zone', () => {
    const now = at('2026-11-19T14:30:00Z'); // 09:30 in New York, 15:30 in Berlin
    expect(windowState({ ...weekdayMornings, timezone: 'America/New_York' }, now).inside).toBe(true);
    expect(windowState({ ...weekdayMornings, timezone: 'Europe/Berlin' }, now).inside).toBe(false);
  });

  it('honours a DTSTART in the rule', () => {
    const rule = {
      rrule: 'DTSTART:20261101T000000\nRRULE:FREQ=DAILY;INTERVAL=2',
      durationMinutes: 60,
      timezone: 'UTC',
    };
    expect(windowState(rule, at('2026-11-03T00:30:00Z')).inside).toBe(true);
    expect(windowState(rule, at('2026-11-04T00:30:00Z'))).toEqual({
      inside: false,
      changesAt: at('2026-11-05T00:00:00Z'),
    });
  });
});

describe('deployment windows whose rules were stored before the limits', () => {
  const now = at('2026-12-02T00:00:00Z');

  it('reads a rule that never starts in milliseconds, and looks again when its search ends', () => {
    const began = performance.now();
    const state = windowState(
      { rrule: 'FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31', durationMinutes: 60, timezone: 'UTC' },
      now,
    );
    expect(performance.now() - began).toBeLessThan(1000);
    expect(state).toEqual({ inside: false, changesAt: at('2036-12-02T00:00:00Z'), searchedUntil: true });
  });

  it('says a rule that has ended never opens again', () => {
    const state = windowState(
      { rrule: 'FREQ=DAILY;UNTIL=20200101T000000Z', durationMinutes: 60, timezone: 'UTC' },
      now,
    );
    expect(state).toEqual({ inside: false });
  });

  it('names the problem of a rule it cannot evaluate, so callers fail closed', () => {
    const state = windowState(
      { rrule: 'FREQ=YEARLY;BYWEEKNO=20', durationMinutes: 60, timezone: 'UTC' },
      now,
    );
    expect(state).toEqual({ inside: false, problem: 'BYWEEKNO is not supported' });
  });
});
