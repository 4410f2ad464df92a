import { createHash } from 'node:crypto';
import { ValidationError } from './errors';
import { isUuid } from './uuid';

/**
 * The continuation of a CEL-filtered list (application/common.ts `listFiltered`): opaque to clients,
 * base64url of JSON. It holds a place in the list's order rather than an offset, so records created
 * or deleted meanwhile neither repeat nor hide the ones after it, and it is bound to the list it was
 * answered for (workspace, table, conditions, order, filter): given with another, it answers 400.
 */

/** A record's place in a list's order: its creation time (epoch microseconds, as digits) and its id. */
export interface RecordKey {
  at: string;
  id: string;
}

/** Where the next page of a filtered list begins. */
export interface FilterCursor {
  /** The last record read before it. */
  after: RecordKey;
  /** How many records matched up to `after`: the next page's offset. */
  matches: number;
  /** How many matches past `after` to skip still: an offset the request that answered it did not reach. */
  skip: number;
}

/** What binds a cursor to one list: a digest of everything that chooses its records. */
export function filterBinding(list: unknown): string {
  return createHash('sha256').update(JSON.stringify(list)).digest('base64url').slice(0, 22);
}

export function encodeFilterCursor(cursor: FilterCursor, binding: string): string {
  const { after, matches, skip } = cursor;
  const fields = { a: after.at, i: after.id, m: matches, s: skip, b: binding };
  return Buffer.from(JSON.stringify(fields)).toString('base64url');
}

/** The cursor `text` holds, or 400 when it is not one a list answered or was answered for another list. */
export function decodeFilterCursor(text: string, binding: string): FilterCursor {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    decoded = undefined;
  }
  const { a, i, m, s, b } = (typeof decoded === 'object' && decoded !== null ? decoded : {}) as Record<
    string,
    unknown
  >;
  if (typeof a !== 'string' || !/^\d{1,17}$/.test(a) || typeof i !== 'string' || !isUuid(i)) {
    throw invalidCursor('is not one a list answered');
  }
  if (!isCount(m) || !isCount(s)) throw invalidCursor('is not one a list answered');
  if (b !== binding) {
    throw invalidCursor(
      'was answered for another list: give it with the same `cel` and other conditions as the request that answered it',
    );
  }
  return { after: { at: a, id: i }, matches: m, skip: s };
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function invalidCursor(reason: string): ValidationError {
  return new ValidationError(`The cursor ${reason}`, [{ path: 'query.cursor', message: reason }]);
}
