import { IdSource, newId } from '../../db/ids';

describe('newId (UUID v7)', () => {
  it('has the version and variant bits of a v7 UUID', () => {
    expect(newId()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('sorts by creation time, across milliseconds', () => {
    let now = 1_700_000_000_000;
    const ids = new IdSource(() => now);
    const earlier = ids.next();
    now += 1;
    expect(earlier < ids.next()).toBe(true);
  });

  it('sorts in the order made within one millisecond, past its counter too, and never repeats', () => {
    const ids = new IdSource(() => 1_700_000_000_000);
    const made = Array.from({ length: 10_000 }, () => ids.next());
    expect([...made].sort()).toEqual(made);
    expect(new Set(made).size).toBe(10_000);
    // Past its counter the timestamp runs ahead of the stalled clock, a millisecond at a time.
    expect(made.at(-1)!.slice(0, 13)).not.toBe(made[0]!.slice(0, 13));
  });

  it('keeps its order when the clock steps back', () => {
    let now = 1_700_000_000_005;
    const ids = new IdSource(() => now);
    const before = ids.next();
    now -= 5;
    expect(before < ids.next()).toBe(true);
  });

  it('keeps the process-wide ids in order, as a request making a set of records does', () => {
    const made = Array.from({ length: 2_000 }, () => newId());
    expect([...made].sort()).toEqual(made);
  });
});
