/** Every list answers `{items, total, limit, offset}` in a stable order. */
export interface Page<T> {
  items: T[];
  total: number;
  limit: number;
  offset: number;
  /**
   * Set when a CEL-filtered list stopped reading after this many records: `total` then counts the
   * matches among them only, and later records are reached by narrowing the filter.
   */
  scanLimit?: number;
  /** Set when `total` was counted up to this many and stopped: there are at least this many. */
  countLimit?: number;
}

export interface PageRequest {
  limit: number;
  offset: number;
}

export function mapPage<T, U>(page: Page<T>, map: (item: T) => U): Page<U> {
  return { ...page, items: page.items.map(map) };
}
