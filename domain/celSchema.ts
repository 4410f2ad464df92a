import { z } from 'zod';
import { checkSelector, describeProblem, MAX_SELECTOR_LENGTH, type SelectorScope } from './selectors';

/** A CEL expression field: refused at validation with the position of the error in its message. */
export function celExpression(scope: SelectorScope) {
  return z
    .string()
    .max(MAX_SELECTOR_LENGTH)
    .superRefine((expression, ctx) => {
      const problem = checkSelector(scope, expression);
      if (problem) ctx.addIssue({ code: 'custom', message: `invalid CEL: ${describeProblem(problem)}` });
    });
}
