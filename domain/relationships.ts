import { selectorContext, selectorMatches, type ResourceFields } from './selectors';

/**
 * Ctrlplane's relationship rules: a rule named by its `reference` relates a release target's
 * resource (`from`) to another resource of the workspace (`to`) by a CEL expression over both, and
 * a variable value `{reference: <that name>, path: [...]}` reads a field of the related resource.
 */

/** A rule's reference name; never one of the records a reference names directly (`resource`, …). */
export const RELATIONSHIP_REFERENCE = /^[A-Za-z][A-Za-z0-9_-]{0,62}$/;

/** How many resources one rule is checked against for one target, at most. */
export const RELATIONSHIP_SCAN_LIMIT = 10_000;

/**
 * The resource a rule relates to `from`: the first of `candidates` (in the order given, the oldest
 * first) for which its expression holds; never `from` itself. Only the first
 * `RELATIONSHIP_SCAN_LIMIT` candidates are checked.
 */
export function findRelated<R extends ResourceFields & { id: string }>(
  cel: string,
  from: R,
  candidates: readonly R[],
): R | undefined {
  const fromFields = selectorContext.resource(from);
  for (const candidate of candidates.slice(0, RELATIONSHIP_SCAN_LIMIT)) {
    if (candidate.id === from.id) continue;
    if (selectorMatches('relationship', cel, { from: fromFields, to: selectorContext.resource(candidate) }))
      return candidate;
  }
  return undefined;
}
