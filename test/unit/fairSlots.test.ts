import { FairSlots } from '../../domain/fairSlots';

/** Acquires a slot and notes, in `granted`, when it comes. */
function take(slots: FairSlots, tenant: string, granted: string[], label = tenant) {
  const release = slots.acquire(tenant).then((give) => {
    granted.push(label);
    return give;
  });
  return release;
}

/** Lets every promise that can settle now settle. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('FairSlots (the shared opa processes, docs/security.md "OPA sandbox")', () => {
  it('never gives one tenant more than its share, however long its queue', async () => {
    const slots = new FairSlots(4, 2);
    const granted: string[] = [];
    const a = [1, 2, 3, 4, 5].map((n) => take(slots, 'A', granted, `A${n}`));
    await settle();
    expect(granted).toEqual(['A1', 'A2']);

    // Another tenant gets one of the free slots at once.
    const b = take(slots, 'B', granted, 'B1');
    await settle();
    expect(granted).toEqual(['A1', 'A2', 'B1']);

    // A's queue moves on only as A's own calls end, in A's order.
    (await a[0]!)();
    await settle();
    expect(granted).toEqual(['A1', 'A2', 'B1', 'A3']);
    (await b)();
    await settle();
    expect(granted).toEqual(['A1', 'A2', 'B1', 'A3']);
  });

  it('gives a freed slot to the waiting tenant that holds the fewest, before the long queue', async () => {
    const slots = new FairSlots(4, 2);
    const granted: string[] = [];
    const a = [1, 2, 3, 4].map((n) => take(slots, 'A', granted, `A${n}`));
    const c = [1, 2, 3].map((n) => take(slots, 'C', granted, `C${n}`));
    await settle();
    expect(granted).toEqual(['A1', 'A2', 'C1', 'C2']);

    // Every slot is taken; B comes last of all, and is next: one slot's time is all it waits.
    const b = take(slots, 'B', granted, 'B1');
    await settle();
    (await a[0]!)();
    await settle();
    expect(granted.at(-1)).toBe('B1');

    // Among tenants holding as many, the one that asked first.
    (await c[0]!)();
    await settle();
    expect(granted.at(-1)).toBe('A3');
    // C, now holding none, before A's earlier A4.
    (await c[1]!)();
    await settle();
    expect(granted.at(-1)).toBe('C3');
    (await b)();
  });

  it('gives a slot back once, however often the release is called', async () => {
    const slots = new FairSlots(1, 1);
    const granted: string[] = [];
    const first = await take(slots, 'A', granted, 'A1');
    const second = take(slots, 'A', granted, 'A2');
    const third = take(slots, 'A', granted, 'A3');
    first();
    first();
    await settle();
    expect(granted).toEqual(['A1', 'A2']);
    (await second)();
    await settle();
    expect(granted).toEqual(['A1', 'A2', 'A3']);
    (await third)();
  });

  it('refuses a share that is no share', () => {
    expect(() => new FairSlots(4, 0)).toThrow(RangeError);
    expect(() => new FairSlots(4, 5)).toThrow(RangeError);
  });
});
