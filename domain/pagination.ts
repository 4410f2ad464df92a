/** Every list answers `{items, total, limit, offset}` in a stable order. */
export interface Page<T> {
  items: T[];
  total: number;
  limit: number;
  offset: number;
  /**
   * On a page of a list given a CEL filter: whether `total` is there and exact. When false, the
   * filter was judged record by record and the reading stopped before the end of the list: the page
   * answers `totalAtLeast` (the matches found so far) instead of `total`, and `nextCursor` continues.
   */
  totalIsExact?: boolean;
  /** On a page of a list given a CEL filter, when matches may follow it: the `cursor` of the next page. */
  nextCursor?: string;
  /** Set when a CEL-filtered list stopped reading after this many records (`totalIsExact` is then false). */
  scanLimit?: number;
}

/**
 * A list whose count stops at a bound (counting every row would cost more than reading the page):
 * `total` when the count is exact, otherwise `totalAtLeast` — a bound is never answered as a total,
 * which a client paging by `total` would take for the end of the list.
 */
export type BoundedPage<T> = Omit<Page<T>, 'total'> & ({ total: number } | { totalAtLeast: number });

/** `total` when `counted` stayed under the bound it was counted to, else `totalAtLeast`. */
export function boundedTotal(counted: number, bound: number): { total: number } | { totalAtLeast: number } {
  return counted >= bound ? { totalAtLeast: bound } : { total: counted };
}

export interface PageRequest {
  limit: number;
  offset: number;
}

/** A page of a list that takes a CEL filter: by offset, or from a `nextCursor` the list answered. */
export interface FilterPageRequest extends PageRequest {
  cursor?: string;
}

export function mapPage<T, U>(page: Page<T>, map: (item: T) => U): Page<U> {
  return { ...page, items: page.items.map(map) };
}
