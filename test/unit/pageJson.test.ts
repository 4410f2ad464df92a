import { isPageBody, pageJson } from '../../api/pageJson';

describe('a page written a record at a time', () => {
  it('is the same JSON as the whole page at once, with or without other fields', async () => {
    const page = {
      items: [
        { id: 'a', at: new Date(0) },
        { id: 'b', n: [1, 2] },
      ],
      total: 2,
      limit: 50,
    };
    expect(JSON.parse(await pageJson(page))).toEqual(JSON.parse(JSON.stringify(page)));
    expect(JSON.parse(await pageJson({ items: [] }))).toEqual({ items: [] });
    expect(isPageBody({ items: [] })).toBe(true);
    expect(isPageBody({ item: [] })).toBe(false);
    expect(isPageBody(null)).toBe(false);
  });

  it('lets the event loop turn between large records', async () => {
    const large = { items: Array.from({ length: 20_000 }, (_, n) => `item${n}`) };
    let turns = 0;
    const counting = setInterval(() => turns++, 0);
    const text = await pageJson({ items: Array.from({ length: 40 }, () => large) });
    clearInterval(counting);
    expect(JSON.parse(text).items).toHaveLength(40);
    expect(turns).toBeGreaterThan(0);
  });
});
