import type { FieldIssue } from './errors';
import { SEALED_MARKER_KEY } from './sensitive';

/**
 * What every JSON request body must be before any route reads it. The limits are far above what
 * a real record needs; they exist so that no caller can make a shared process recurse, allocate or
 * store without bound.
 *
 * - Nesting depth: recursive code (validation, merging, CEL contexts, JSONB) walks these values.
 * - Node count: the body limit bounds bytes, not work (`[[],[],…]` is 2 bytes a node).
 * - Strings: no NUL (PostgreSQL text and JSONB refuse it) and no lone UTF-16 surrogate (it cannot
 *   be stored as UTF-8 without silently becoming U+FFFD, so what we stored would differ from what
 *   was sent). The same holds for object keys.
 * - The sealed-value marker key is reserved (see SEALED_MARKER_KEY).
 */
export const JSON_INPUT_LIMITS = { maxDepth: 32, maxNodes: 100_000 } as const;

// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** `maxNodes`: a route that takes a bulk body (a provider's set) allows more (api/route.ts `largeBody`). */
export function jsonInputIssues(body: unknown, maxNodes: number = JSON_INPUT_LIMITS.maxNodes): FieldIssue[] {
  const issues: FieldIssue[] = [];
  let nodes = 0;
  const visit = (value: unknown, path: string, depth: number): void => {
    if (issues.length > 0) return;
    if (++nodes > maxNodes) {
      issues.push({ path: 'body', message: `holds more than ${maxNodes} values` });
      return;
    }
    if (typeof value === 'string') {
      const problem = textProblem(value);
      if (problem) issues.push({ path, message: problem });
      return;
    }
    if (value === null || typeof value !== 'object') return;
    if (depth >= JSON_INPUT_LIMITS.maxDepth) {
      issues.push({ path, message: `nests deeper than ${JSON_INPUT_LIMITS.maxDepth} levels` });
      return;
    }
    if (Array.isArray(value)) {
      value.forEach((item, index) => visit(item, `${path}[${index}]`, depth + 1));
      return;
    }
    for (const [key, item] of Object.entries(value)) {
      const keyProblem = textProblem(key);
      if (keyProblem) {
        issues.push({ path, message: `has a key that ${keyProblem}` });
        return;
      }
      if (key === SEALED_MARKER_KEY) {
        issues.push({ path, message: `uses the reserved key ${SEALED_MARKER_KEY}` });
        return;
      }
      visit(item, `${path}.${key}`, depth + 1);
    }
  };
  visit(body, 'body', 0);
  return issues;
}

/** Why a string cannot be taken as input (path, query or JSON), if it cannot. */
export function textProblem(value: string): string | undefined {
  if (value.includes('\u0000')) return 'contains a NUL character';
  if (LONE_SURROGATE.test(value)) return 'contains an unpaired UTF-16 surrogate';
  return undefined;
}
