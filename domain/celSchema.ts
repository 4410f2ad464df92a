import { z } from 'zod';
import { checkSelector, describeProblem, MAX_SELECTOR_LENGTH, type SelectorScope } from './selectors';

/**
 * A `?cel=` value that was URL-encoded once more than a query needs (Ctrlplane's CLI sends its
 * filter so), decoded again; only when it does not check as it is and its decoding does, so an
 * expression that is valid as sent is never changed.
 */
export function undoExtraEncoding(scope: SelectorScope, value: unknown): unknown {
  if (typeof value !== 'string' || !/%[0-9a-f]{2}/i.test(value) || !checkSelector(scope, value)) return value;
  let decoded: string;
  try {
    decoded = decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return value;
  }
  return checkSelector(scope, decoded) ? value : decoded;
}

/**
 * A CEL expression field: refused at validation with the position of the error in its message. With
 * `emptyIsNone`, "" is taken as no expression (where an answer shows "" for none, it can be sent back).
 */
export function celExpression(scope: SelectorScope, options: { emptyIsNone?: boolean } = {}) {
  return z
    .string()
    .max(MAX_SELECTOR_LENGTH)
    .superRefine((expression, ctx) => {
      if (options.emptyIsNone && expression === '') return;
      const problem = checkSelector(scope, expression);
      if (problem) ctx.addIssue({ code: 'custom', message: `invalid CEL: ${describeProblem(problem)}` });
    });
}
