import { setImmediate as nextTurn } from 'node:timers/promises';
import { SLICE_MS } from '../engine/selectors';

/** A list's answer: its page of records and what describes the page. */
export type PageBody = { items: unknown[] } & Record<string, unknown>;

export function isPageBody(body: unknown): body is PageBody {
  return typeof body === 'object' && body !== null && Array.isArray((body as { items?: unknown }).items);
}

/**
 * A page's JSON, written a record at a time with a turn of the event loop whenever a slice of
 * `SLICE_MS` has been spent: a page of a neighbour's large records is megabytes of JSON, and one
 * `JSON.stringify` of it held every other request for 11–17 ms (docs/design.md, "Isolation"). A page
 * of ordinary records is written in one slice, without a turn.
 */
export async function pageJson(body: PageBody): Promise<string> {
  const { items, ...rest } = body;
  const parts: string[] = [];
  let sliceStarted = performance.now();
  for (const item of items) {
    parts.push(JSON.stringify(item) ?? 'null');
    if (performance.now() - sliceStarted >= SLICE_MS) {
      await nextTurn();
      sliceStarted = performance.now();
    }
  }
  const others = JSON.stringify(rest);
  const page = `{"items":[${parts.join(',')}]`;
  return others === '{}' ? `${page}}` : `${page},${others.slice(1)}`;
}
