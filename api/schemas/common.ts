import { celExpression, undoExtraEncoding } from '../../domain/celSchema';
import { displayText } from '../../domain/displayText';
import type { BoundedPage, Page } from '../../domain/pagination';
import { SELECTOR_SCOPES, type SelectorScope } from '../../domain/selectors';
import { z } from './zod';

export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    message: z.string().openapi({ description: 'The detail again, where Ctrlplane’s clients read it' }),
    code: z.string().openapi({ description: 'Stable, machine-readable error code' }),
    instance: z.string().optional(),
    requestId: z.string().optional(),
    errors: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .openapi({ description: 'One entry per invalid field, with its path' }),
    details: z
      .record(z.string(), z.unknown())
      .optional()
      .openapi({ description: 'What an error carries besides its text, where Ctrlplane documents it' }),
  })
  .openapi('Problem', { description: 'RFC 9457 problem details' });

export const IdSchema = z.uuid();

/** Shown on a record whose saved selector was stopped by its evaluation budget (absent otherwise). */
export const SelectorWarningsSchema = z
  .array(
    z.object({
      path: z.string().openapi({ description: 'The field holding the selector' }),
      message: z.string(),
      lastSeenAt: z.iso.datetime({ offset: true }),
    }),
  )
  .openapi('SelectorWarnings', {
    description:
      'Selectors of this record whose evaluation was stopped by its budget: they did not match the records they were stopped on',
  });

export const MetadataSchema = z.record(z.string().max(256), z.string().max(4096)).openapi({
  description: 'String map used for classification and in selectors',
  example: { team: 'payments' },
});

export const JsonObjectSchema = z.record(z.string(), z.unknown());

export const Timestamp = z.iso.datetime({ offset: true });

export const WorkspaceParams = z.object({ workspaceId: IdSchema });

/**
 * A whole number in a query string: decimal digits only, so `0x10`, `1e3` or `1.0` are refused
 * rather than read as something the caller may not have meant.
 */
export function queryInteger(min: number, max: number) {
  return z
    .string()
    .regex(/^\d{1,10}$/, 'must be a whole number written in decimal digits')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .openapi({ type: 'integer', minimum: min, maximum: max });
}

/** `limit` 1–1000 (default given per list) and `offset` 0–1,000,000 (deeper pages: narrow the filter). */
export function pageQuery(defaultLimit = 50) {
  return z.object({
    limit: queryInteger(1, 1000).default(defaultLimit).openapi({ default: defaultLimit }),
    offset: queryInteger(0, 1_000_000).default(0).openapi({ default: 0 }),
  });
}

/**
 * A page of a list. A list whose count stops at a bound (`boundedTotal`) answers `total` only when
 * its count is exact, and `totalAtLeast` otherwise (domain/pagination.ts `BoundedPage`).
 */
export function pageOf<T extends z.ZodType>(item: T, name: string, options: { boundedTotal?: boolean } = {}) {
  const total = z.number().int();
  return z
    .object({
      items: z.array(item),
      total: options.boundedTotal
        ? total.optional().openapi({
            description: 'The exact number of items; absent when counting stopped at `totalAtLeast`',
          })
        : total,
      limit: z.number().int(),
      offset: z.number().int(),
      totalIsExact: z.boolean().optional().openapi({
        description:
          'Present on a list given a `cel` filter. True: `total` is exact. False: the filter was judged record by record and this request stopped reading before the end of the list, so the page answers `totalAtLeast` (the matches found so far) instead of `total`; follow `nextCursor` to read on',
      }),
      nextCursor: z.string().optional().openapi({
        description:
          'Present on a list given a `cel` filter when matches may follow this page: pass it as `cursor`, with the same `cel` and other conditions, for the next page. Following it until it is absent reaches every match',
      }),
      scanLimit: z.number().int().optional().openapi({
        description:
          'Present when a `cel` filter judged record by record stopped reading after this many records (`totalIsExact` is then false and `nextCursor` reads on)',
      }),
      ...(options.boundedTotal
        ? {
            totalAtLeast: z.number().int().optional().openapi({
              description:
                'Present instead of `total` when counting stopped at this many: there are at least that many items (a poll counts at most 100 past its page, the audit trail 10,000 events, a `cel` filter judged record by record the matches in the 10,000 records it read)',
            }),
          }
        : {}),
    })
    .openapi(name);
}

export function pageResponse<T, U>(page: Page<T>, map: (item: T) => U): Page<U>;
export function pageResponse<T, U>(page: BoundedPage<T>, map: (item: T) => U): BoundedPage<U>;
export function pageResponse<T, U>(page: BoundedPage<T>, map: (item: T) => U): BoundedPage<U> {
  return { ...page, items: page.items.map(map) };
}

export const iso = (date: Date): string => date.toISOString();

/** `{[key]: value}`, or nothing when there is no value: a value we do not have is left out, not null. */
export function ifPresent<K extends string, V>(key: K, value: V | null | undefined): { [P in K]?: V } {
  return value === null || value === undefined ? {} : ({ [key]: value } as { [P in K]?: V });
}
export const isoOrNull = (date: Date | null | undefined): string | null => (date ? date.toISOString() : null);

export const Slug = displayText(
  z
    .string()
    .min(1)
    .max(100)
    .regex(/^[A-Za-z0-9]+([-_.][A-Za-z0-9]+)*$/, 'letters, digits and single - _ . separators'),
  'single',
);

export const Name = displayText(z.string().trim().min(1).max(200), 'single');

export const Description = displayText(z.string().max(4000), 'multi').nullish();

/** The answer to a DELETE: the record is gone (Ctrlplane answers deletes with 202 and this shape). */
export const AcceptedSchema = z.object({ id: z.string(), message: z.string() }).openapi('Accepted');

export function accepted(id: string, message: string) {
  return { status: 202, body: { id, message } };
}

/**
 * A PUT that creates or replaces answers 202 with the record either way, as Ctrlplane's API does:
 * what follows from it (release targets, releases) happens after the answer. With a noun, the
 * answer also says what was done in `message`, where Ctrlplane answers `{id, message}`.
 */
export function upserted<T, U extends object>(
  result: { record: T; created: boolean },
  map: (record: T) => U,
  noun?: string,
) {
  const body = map(result.record);
  return {
    status: 202 as const,
    body: noun ? { ...body, message: savedMessage(noun, result.created) } : body,
  };
}

/** What a write did, as the `message` of its answer: `Deployment created`, `Job agent updated`. */
export function savedMessage(noun: string, created: boolean): string {
  return `${noun[0]!.toUpperCase()}${noun.slice(1)} ${created ? 'created' : 'updated'}`;
}

/** A record as a write answers it where Ctrlplane answers `{id, message}`: its fields and that message. */
export function withMessage<S extends z.ZodObject>(schema: S, name: string) {
  return schema
    .extend({ message: z.string().openapi({ description: 'What the request did, e.g. `System created`' }) })
    .openapi(name);
}

/** The responses of a PUT that creates or replaces. */
export function upsertResponses<S>(schema: S) {
  return { 202: { description: 'Created or replaced; what follows from it happens next', schema } };
}

/** `cursor`: the `nextCursor` of a filtered list's previous page. */
export const FilterCursorQuery = z.string().min(1).max(512).optional().openapi({
  description:
    'The `nextCursor` of the previous page, given with the same `cel` and other conditions (and no `offset`): the page after it',
});

/** The page query of a list that takes a `cel` filter over `scope`. */
export function filteredPageQuery(scope: SelectorScope) {
  return pageQuery().extend({ cel: celQuery(scope), cursor: FilterCursorQuery });
}

/** `?cel=` on lists that take a filter (also as Ctrlplane's CLI encodes it, once too often). */
export function celQuery(scope: SelectorScope) {
  return z
    .preprocess((value) => undoExtraEncoding(scope, value), celExpression(scope))
    .optional()
    .openapi({ description: `CEL filter over \`${SELECTOR_SCOPES[scope].join('`, `')}\`` });
}
