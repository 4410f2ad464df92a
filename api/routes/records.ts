import type { ZodObject, ZodType } from 'zod';
import type { Stores } from '../../application';
import type { Upserted } from '../../application/common';
import type { BoundedPage, FilterPageRequest, Page } from '../../domain/pagination';
import { CelQuery, type HeldSelector, type RecordScope } from '../../domain/selectors';
import { route, type ResponseSpec, type Route } from '../route';
import {
  accepted,
  AcceptedSchema,
  filteredPageQuery,
  pageOf,
  pageQuery,
  savedMessage,
  upserted,
  upsertResponses,
  withMessage,
  WorkspaceParams,
} from '../schemas/common';

/** The store operations a workspace record offers; `create` only for records created by POST. */
export interface RecordStore<R> {
  create?(workspaceId: string, input: never): Promise<R>;
  upsert(workspaceId: string, id: string, input: never): Promise<Upserted<R>>;
  get(workspaceId: string, id: string): Promise<R>;
  list(
    workspaceId: string,
    page: FilterPageRequest,
    filter?: CelQuery<RecordScope>,
  ): Promise<Page<R> | BoundedPage<R>>;
  /** Answers the deleted record, or nothing. */
  delete(workspaceId: string, id: string): Promise<R | void>;
}

export interface RecordRoutesSpec<R> {
  /** `system`, `job agent`: used in summaries and messages. */
  noun: string;
  tag: string;
  /** The collection's path, e.g. `/workspaces/{workspaceId}/systems`. */
  collection: string;
  /** The path parameter naming one record, e.g. `systemId`. */
  idParam: string;
  params: ZodObject;
  body: ZodType;
  schema: ZodObject;
  /**
   * The name of the answer to POST and PUT when it carries a `message` beside the record (Ctrlplane answers those
   * writes with `{id, message}`); absent: the record alone.
   */
  acceptedName?: string;
  pageName: string;
  store: (stores: Stores) => RecordStore<R>;
  /** Records as the API shows them; given all of a page at once so related data loads in one query. */
  present: (stores: Stores, records: R[]) => Promise<unknown[]>;
  /** Offer `POST` on the collection (202 with the record). */
  creatable: boolean;
  /** DELETE answers the deleted record as shown (Ctrlplane's policies), not `{id, message}`; its store returns it. */
  deleteAnswersRecord?: boolean;
  /** A `cel` filter on the list, over this identifier. */
  filter?: { scope: RecordScope };
  duplicate?: string;
  /** A GET of one record that shows more than the list does. */
  detail?: { schema: ZodType; load: (stores: Stores, workspaceId: string, id: string) => Promise<unknown> };
  /** List items that show more than `present` does. */
  listItem?: { schema: ZodType; present: (stores: Stores, records: R[]) => Promise<unknown[]> };
  /** The saved selectors a record holds: any that turned out slow is shown as `selectorWarnings`. */
  selectors?: (record: R) => HeldSelector[];
}

/** Records as shown, each with `selectorWarnings` when one of its selectors turned out slow. */
async function withSelectorWarnings<R>(
  stores: Stores,
  records: R[],
  shown: unknown[],
  selectors: ((record: R) => HeldSelector[]) | undefined,
): Promise<unknown[]> {
  if (!selectors) return shown;
  const warnings = await stores.selectorOverruns.warnings(records.map(selectors));
  return shown.map((item, index) =>
    warnings[index]!.length > 0 ? { ...(item as object), selectorWarnings: warnings[index] } : item,
  );
}

/** What the routes of one kind of record share, derived once from its spec. */
function recordKit<R>(spec: RecordRoutesSpec<R>) {
  const present = async (stores: Stores, records: R[]) =>
    withSelectorWarnings(stores, records, await spec.present(stores, records), spec.selectors);
  return {
    one: `${spec.collection}/{${spec.idParam}}`,
    tags: [spec.tag],
    idOf: (params: Record<string, unknown>) => params[spec.idParam] as string,
    present,
    show: async (stores: Stores, record: R) => (await present(stores, [record]))[0],
    conflict: (spec.duplicate ? { 409: { description: spec.duplicate } } : {}) as Record<
      number,
      ResponseSpec
    >,
    acceptedSchema: spec.acceptedName ? withMessage(spec.schema, spec.acceptedName) : spec.schema,
    noun: spec.noun[0]!.toUpperCase() + spec.noun.slice(1),
  };
}

type RecordKit<R> = ReturnType<typeof recordKit<R>>;

/**
 * The routes every workspace record has: POST (where records are created without an id), list,
 * GET, PUT with a client-chosen id (202, created or replaced) and DELETE (202).
 */
export function recordRoutes<R>(spec: RecordRoutesSpec<R>): Route[] {
  const kit = recordKit(spec);
  return [
    ...(spec.creatable ? [createRoute(spec, kit)] : []),
    listRoute(spec, kit),
    getRoute(spec, kit),
    putRoute(spec, kit),
    deleteRoute(spec, kit),
  ];
}

/** POST: a record created without an id. */
function createRoute<R>(spec: RecordRoutesSpec<R>, kit: RecordKit<R>): Route {
  const { tags, show, acceptedSchema, conflict } = kit;
  return route({
    method: 'post',
    path: spec.collection,
    summary: `Create a ${spec.noun}`,
    description: 'Answers 202 Accepted with the record, which is readable at once.',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    body: spec.body,
    responses: { 202: { description: `The ${spec.noun}`, schema: acceptedSchema }, ...conflict },
    async handle(ctx, { params, body }) {
      const store = spec.store(ctx.state.stores);
      const record = await store.create!(params.workspaceId, body as never);
      const shown = (await show(ctx.state.stores, record)) as object;
      return {
        status: 202,
        body: spec.acceptedName ? { ...shown, message: savedMessage(spec.noun, true) } : shown,
      };
    },
  });
}

/** GET of the collection, optionally filtered by CEL. */
function listRoute<R>(spec: RecordRoutesSpec<R>, kit: RecordKit<R>): Route {
  const { tags, present } = kit;
  const filter = spec.filter;
  return route({
    method: 'get',
    path: spec.collection,
    summary: `List ${spec.noun}s, oldest first`,
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    query: filter ? filteredPageQuery(filter.scope) : pageQuery(),
    responses: {
      200: {
        description: `${spec.noun}s`,
        schema: pageOf(spec.listItem?.schema ?? spec.schema, spec.pageName, {
          boundedTotal: filter !== undefined,
        }),
      },
    },
    async handle(ctx, { params, query }) {
      const cel = (query as { cel?: string }).cel;
      const page = await spec
        .store(ctx.state.stores)
        .list(params.workspaceId, query, filter && cel ? new CelQuery(filter.scope, cel) : undefined);
      const items = spec.listItem
        ? await withSelectorWarnings(
            ctx.state.stores,
            page.items,
            await spec.listItem.present(ctx.state.stores, page.items),
            spec.selectors,
          )
        : await present(ctx.state.stores, page.items);
      return { status: 200, body: { ...page, items } };
    },
  });
}

/** GET of one record. */
function getRoute<R>(spec: RecordRoutesSpec<R>, kit: RecordKit<R>): Route {
  const { one, tags, idOf, show } = kit;
  return route({
    method: 'get',
    path: one,
    summary: `Get a ${spec.noun}`,
    tags,
    auth: 'apiKey',
    params: spec.params,
    responses: { 200: { description: `The ${spec.noun}`, schema: spec.detail?.schema ?? spec.schema } },
    async handle(ctx, { params }) {
      const workspaceId = params.workspaceId as string;
      if (spec.detail) {
        const shown = await spec.detail.load(ctx.state.stores, workspaceId, idOf(params));
        const record = await spec.store(ctx.state.stores).get(workspaceId, idOf(params));
        return {
          status: 200,
          body: (await withSelectorWarnings(ctx.state.stores, [record], [shown], spec.selectors))[0],
        };
      }
      const record = await spec.store(ctx.state.stores).get(workspaceId, idOf(params));
      return { status: 200, body: await show(ctx.state.stores, record) };
    },
  });
}

/** PUT with a client-chosen id: created or replaced. */
function putRoute<R>(spec: RecordRoutesSpec<R>, kit: RecordKit<R>): Route {
  const { one, tags, idOf, show, acceptedSchema, conflict } = kit;
  return route({
    method: 'put',
    path: one,
    summary: `Create or replace the ${spec.noun} with this id`,
    tags,
    auth: 'apiKey',
    params: spec.params,
    body: spec.body,
    responses: { ...upsertResponses(acceptedSchema), ...conflict },
    async handle(ctx, { params, body }) {
      const result = await spec
        .store(ctx.state.stores)
        .upsert(params.workspaceId as string, idOf(params), body as never);
      const shown = await show(ctx.state.stores, result.record);
      return upserted(result, () => shown as object, spec.acceptedName ? spec.noun : undefined);
    },
  });
}

/** DELETE of one record. */
function deleteRoute<R>(spec: RecordRoutesSpec<R>, kit: RecordKit<R>): Route {
  const { one, tags, idOf, noun, show } = kit;
  return route({
    method: 'delete',
    path: one,
    summary: `Delete a ${spec.noun}`,
    tags,
    auth: 'apiKey',
    params: spec.params,
    responses: {
      202: spec.deleteAnswersRecord
        ? { description: `The deleted ${spec.noun}`, schema: spec.schema }
        : { description: 'Deleted', schema: AcceptedSchema },
    },
    async handle(ctx, { params }) {
      const deleted = await spec.store(ctx.state.stores).delete(params.workspaceId as string, idOf(params));
      if (spec.deleteAnswersRecord && deleted) {
        return { status: 202, body: (await show(ctx.state.stores, deleted)) as object };
      }
      return accepted(idOf(params), `${noun} deleted`);
    },
  });
}
