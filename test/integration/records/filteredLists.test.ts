import { randomUUID } from 'node:crypto';
import { selectorMatches, selectorContext, type ResourceFields } from '../../../domain/selectors';
import { celPredicate } from '../../../engine/selectors';
import { CelQuery } from '../../../domain/selectors';
import { FILTER_SCAN_LIMIT } from '../../../application/common';
import { createOtherWorkspace, expectFieldError, type WorkspaceAccess } from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * docs/api.md "Records, selectors and release targets", selectors: CEL-filtered lists are complete at any
 * size. Filters of the shapes engine/selectors/celSql.ts translates run in PostgreSQL with an exact total and
 * the answers CEL gives; any other filter reads `FILTER_SCAN_LIMIT` records per request and answers a cursor
 * that reads on.
 */
describe('filtered lists past the scan limit', () => {
  let stack: TestStack;
  const resourcesOf = (workspace: WorkspaceAccess) => `/v1/workspaces/${workspace.id}/resources`;
  const identifiers = (body: { items: { identifier: string }[] }) => body.items.map((r) => r.identifier);
  const bulk = (from: number, to: number) =>
    Array.from({ length: to - from + 1 }, (_, n) => `bulk/${from + n}`);

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());

  describe('a translated filter', () => {
    let workspace: WorkspaceAccess;
    const fields: Omit<ResourceFields, 'config'>[] = [
      {
        identifier: 'prod/api',
        name: 'api-1',
        kind: 'vm',
        version: 'v1',
        metadata: { env: 'prod', team: 'pay' },
      },
      { identifier: 'qa/api', name: 'api-2', kind: 'vm', version: 'v2', metadata: { env: 'qa' } },
      { identifier: 'prod/web', name: 'web', kind: 'pod', version: 'v1', metadata: {} },
      {
        identifier: 'prod/web2',
        name: 'Web',
        kind: 'pod',
        version: 'v0',
        metadata: { env: '', team: 'payments' },
      },
      {
        identifier: 'dev/db',
        name: 'db',
        kind: 'db',
        version: 'v3',
        metadata: { env: 'prod ', 'odd key': `x'y` },
      },
      {
        identifier: 'ünï/1',
        name: 'ünï',
        kind: 'vm',
        version: 'v1',
        metadata: { env: 'PROD', team: 'pay"' },
      },
    ];
    const resources: ResourceFields[] = fields.map((r) => ({ ...r, config: {} }));

    beforeAll(async () => {
      workspace = await createOtherWorkspace(stack, 'Semantics');
      for (const { identifier, ...fields } of resources) {
        await stack.http
          .put(`${resourcesOf(workspace)}/identifier/${encodeURIComponent(identifier)}`)
          .set(workspace.auth)
          .send(fields)
          .expect(202);
      }
    });

    it.each([
      'resource.kind == "vm"',
      'resource.kind != "vm"',
      'resource.version in ["v0", "v1"]',
      'resource.metadata.env == "prod"',
      'resource.metadata["env"] != "prod"',
      '!(resource.metadata.env == "prod")',
      '!(resource.metadata.env != "prod")',
      'resource.metadata.env == ""',
      'resource.metadata.env in ["prod", "qa"]',
      '!(resource.metadata.env in ["prod", "qa"])',
      'resource.metadata.team.startsWith("pay")',
      '!resource.metadata.team.startsWith("pay")',
      'resource.metadata["odd key"] == "x\'y"',
      'resource.metadata.team == "pay\\""',
      'resource.name.startsWith("ün") || resource.name.startsWith("W")',
      'resource.identifier.startsWith("prod/") && !(resource.kind in ["vm"])',
      'resource.metadata.env == "prod" || resource.metadata.team == "payments"',
      '!(resource.metadata.env == "prod" || resource.metadata.team == "pay")',
      'resource.metadata.env == "qa" || resource.kind == "pod"',
      '!(resource.metadata.env == "qa" && resource.kind == "vm")',
      '!(resource.metadata.team == "pay" && resource.kind == "pod")',
      'resource.name.contains("eb")',
      'resource.name.contains("") && resource.identifier.endsWith("")',
      'resource.identifier.endsWith("/api") || resource.metadata.env.contains("RO")',
      '!resource.metadata.team.endsWith("ay")',
      '!resource.metadata["odd key"].contains("\'")',
      'resource.metadata.team.contains("ay\\"") || resource.name.endsWith("ï")',
    ])('answers what CEL answers, exactly counted: %s', async (cel) => {
      expect(celPredicate('resource', new CelQuery('resource', cel).ast)).toBeDefined();
      const expected = resources
        .filter((r) => selectorMatches('resource', cel, { resource: selectorContext.resource(r) }))
        .map((r) => r.identifier);
      const res = await stack.http.get(resourcesOf(workspace)).query({ cel }).set(workspace.auth).expect(200);
      expect(identifiers(res.body)).toEqual(expected);
      expect(res.body).toMatchObject({ total: expected.length, totalIsExact: true });
      expect(res.body.scanLimit).toBeUndefined();
    });
  });

  describe('over 11,002 resources', () => {
    let workspace: WorkspaceAccess;
    const list = (query: Record<string, string | number>) =>
      stack.http.get(resourcesOf(workspace)).query(query).set(workspace.auth);

    beforeAll(async () => {
      workspace = await createOtherWorkspace(stack, 'Bulk');
      // Written straight to the table: thousands of PUTs would only slow the test. The first 1,002
      // are `cold`, so the 10,000 `hot` ones run to the last record, past any scan of 10,000.
      await stack.orm.em
        .fork()
        .getConnection()
        .execute(
          `INSERT INTO resource (id, workspace_id, identifier, name, version, kind, metadata, created_at)
           SELECT gen_random_uuid(), ?, 'bulk/' || n, 'bulk ' || n, 'v1', 'node',
                  jsonb_build_object('tier', CASE WHEN n <= 1002 THEN 'cold' ELSE 'hot' END),
                  now() + n * interval '1 microsecond'
             FROM generate_series(1, 11002) AS n`,
          [workspace.id],
        );
    });

    it('answers a metadata filter from SQL: an exact total, and pages past 10,000 by offset or cursor', async () => {
      const cel = 'resource.metadata["tier"] == "hot"';
      const first = await list({ cel, limit: 5 }).expect(200);
      expect(first.body).toMatchObject({ total: 10_000, totalIsExact: true, offset: 0 });
      expect(first.body.scanLimit).toBeUndefined();
      expect(identifiers(first.body)).toEqual(bulk(1003, 1007));

      const last = await list({ cel, limit: 5, offset: 9_998 }).expect(200);
      expect(identifiers(last.body)).toEqual(['bulk/11001', 'bulk/11002']);
      expect(last.body).toMatchObject({ total: 10_000, totalIsExact: true, offset: 9_998 });
      expect(last.body.nextCursor).toBeUndefined();

      const second = await list({ cel, limit: 5, cursor: first.body.nextCursor }).expect(200);
      expect(identifiers(second.body)).toEqual(bulk(1008, 1012));
      expect(second.body).toMatchObject({ total: 10_000, totalIsExact: true, offset: 5 });
    });

    it('reads on past the scan limit with the cursor of a filter CEL judges, to an exact total', async () => {
      const cel = 'size(resource.metadata["tier"]) == 3';
      expect(celPredicate('resource', new CelQuery('resource', cel).ast)).toBeUndefined();

      // The first 10,000 records hold 8,998 matches: the page holds the last 8 of them.
      const first = await list({ cel, limit: 20, offset: 8_990 }).expect(200);
      expect(first.body).toMatchObject({
        totalAtLeast: 8_998,
        totalIsExact: false,
        scanLimit: FILTER_SCAN_LIMIT,
        offset: 8_990,
      });
      // A count that stopped is never answered as `total`: a client paging by it would stop here.
      expect(first.body).not.toHaveProperty('total');
      expect(identifiers(first.body)).toEqual(bulk(9_993, 10_000));

      const second = await list({ cel, limit: 20, cursor: first.body.nextCursor }).expect(200);
      expect(identifiers(second.body)).toEqual(bulk(10_001, 10_020));
      expect(second.body).toMatchObject({ total: 10_000, totalIsExact: true, offset: 8_998 });
      expect(second.body.scanLimit).toBeUndefined();
      expect(second.body).not.toHaveProperty('totalAtLeast');

      const third = await list({ cel, limit: 20, cursor: second.body.nextCursor }).expect(200);
      expect(identifiers(third.body)).toEqual(bulk(10_021, 10_040));
      expect(third.body.offset).toBe(9_018);
    });

    it("gives a runbook's selector input every match, past any one reading", async () => {
      const cel = 'resource.name == "bulk 7" || size(resource.name) == 10 && resource.name.endsWith("11002")';
      expect(celPredicate('resource', new CelQuery('resource', cel).ast)).toBeUndefined();
      const ws = `/v1/workspaces/${workspace.id}`;
      const agentId = randomUUID();
      await stack.http
        .put(`${ws}/job-agents/${agentId}`)
        .set(workspace.auth)
        .send({ name: 'bulk-puller', type: 'http-pull', config: {} })
        .expect(202);
      const runbook = await stack.http
        .post(`${ws}/workflows`)
        .set(workspace.auth)
        .send({
          name: 'Two of eleven thousand',
          inputs: [{ key: 'targets', type: 'array', selector: { entityType: 'resource', default: cel } }],
          jobAgents: [{ name: 'run', ref: agentId, config: {} }],
        })
        .expect(201);
      const run = await stack.http
        .post(`${ws}/workflows/${runbook.body.id}/runs`)
        .set(workspace.auth)
        .send({ inputs: {} })
        .expect(201);
      const selected = await stack.orm.em
        .fork()
        .getConnection()
        .execute<{ identifier: string }[]>(
          'SELECT identifier FROM resource WHERE id = ANY(?::uuid[]) ORDER BY created_at',
          [run.body.jobs.map((job: { resourceId: string }) => job.resourceId)],
        );
      expect(selected.map((row) => row.identifier)).toEqual(['bulk/7', 'bulk/11002']);
    });

    it('carries an offset the first reading did not reach into the cursor', async () => {
      const cel = 'size(resource.metadata["tier"]) == 3';
      const first = await list({ cel, limit: 10, offset: 9_995 }).expect(200);
      expect(first.body).toMatchObject({
        items: [],
        totalAtLeast: 8_998,
        totalIsExact: false,
        offset: 9_995,
      });
      expect(first.body).not.toHaveProperty('total');
      const rest = await list({ cel, limit: 10, cursor: first.body.nextCursor }).expect(200);
      expect(identifiers(rest.body)).toEqual(bulk(10_998, 11_002));
      expect(rest.body).toMatchObject({ total: 10_000, totalIsExact: true, offset: 9_995 });
      expect(rest.body.nextCursor).toBeUndefined();
    });

    it('refuses a cursor that is not one, or is given with another filter, an offset or no filter (400)', async () => {
      const cel = 'size(resource.metadata["tier"]) == 3';
      const { nextCursor } = (await list({ cel, limit: 1 }).expect(200)).body as { nextCursor: string };
      expectFieldError(
        await list({ cel, cursor: 'not-a-cursor' }),
        'query.cursor',
        'not one a list answered',
      );
      expectFieldError(
        await list({ cel: 'size(resource.metadata["tier"]) == 4', cursor: nextCursor }),
        'query.cursor',
        'another list',
      );
      expectFieldError(await list({ cel, cursor: nextCursor, offset: 1 }), 'query.offset', 'not with cursor');
      expectFieldError(await list({ cursor: nextCursor }), 'query.cursor', 'only with cel');
      const other = await createOtherWorkspace(stack, 'Elsewhere');
      const elsewhere = await stack.http
        .get(resourcesOf(other))
        .query({ cel, cursor: nextCursor })
        .set(other.auth);
      expectFieldError(elsewhere, 'query.cursor', 'another list');
    });
  });
});
