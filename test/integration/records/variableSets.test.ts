import type { Response } from 'supertest';
import { SecretBox } from '../../../db/secrets';
import {
  createOtherWorkspace,
  expectFieldError,
  expectNothingWritten,
  expectProblem,
  type WorkspaceAccess,
} from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

const WATCHED_TABLES = ['variable_set', 'variable_set_variable', 'outbox'] as const;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Ctrlplane's variable sets over HTTP: its paths and status codes, validation, workspaces, secrets. */
describe('variable sets over HTTP', () => {
  let stack: TestStack;
  let other: WorkspaceAccess;
  const sets = () => `/v1/workspaces/${stack.workspaceId}/variable-sets`;

  async function stored(setId: string) {
    return stack.orm.em
      .fork()
      .getConnection()
      .execute<{ key: string; value: unknown; reference: unknown; sensitive: boolean }[]>(
        'SELECT key, value, reference, sensitive FROM variable_set_variable WHERE variable_set_id = ? ORDER BY key',
        [setId],
      );
  }

  async function refusedWithoutWrites(send: () => PromiseLike<Response>): Promise<Response> {
    const res = await expectNothingWritten(stack, WATCHED_TABLES, send);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    return res;
  }

  const create = (body: object) => stack.http.post(sets()).set(stack.auth).send(body);

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
    other = await createOtherWorkspace(stack);
  });
  afterAll(() => stack.close());

  describe('CRUD', () => {
    let id: string;

    it('creates a set (201) and shows it without its variables, as Ctrlplane does', async () => {
      const res = await create({
        name: 'eu-defaults',
        selector: 'resource.metadata["region"].startsWith("eu-")',
        variables: [
          { key: 'LOG_LEVEL', value: 'info' },
          { key: 'REPLICAS', value: 3 },
          { key: 'FEATURES', value: { object: { search: true } } },
          { key: 'TAGS', value: ['a', 'b'] },
          { key: 'REGION', value: { reference: 'resource', path: ['metadata', 'region'] } },
          { key: 'DB_PASSWORD', value: 'hunter2', sensitive: true },
        ],
      }).expect(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        name: 'eu-defaults',
        description: '',
        selector: 'resource.metadata["region"].startsWith("eu-")',
        priority: 0,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      id = res.body.id;
    });

    it('gets it with its variables: objects wrapped as Ctrlplane writes them, secrets hidden', async () => {
      const res = await stack.http.get(`${sets()}/${id}`).set(stack.auth).expect(200);
      expect(res.body.variables).toEqual([
        { key: 'DB_PASSWORD', value: { sensitive: true }, sensitive: true },
        { key: 'FEATURES', value: { object: { search: true } }, sensitive: false },
        { key: 'LOG_LEVEL', value: 'info', sensitive: false },
        { key: 'REGION', value: { reference: 'resource', path: ['metadata', 'region'] }, sensitive: false },
        { key: 'REPLICAS', value: 3, sensitive: false },
        { key: 'TAGS', value: ['a', 'b'], sensitive: false },
      ]);
    });

    it('stores a sensitive value sealed, bound to its set', async () => {
      const rows = await stored(id);
      const secret = rows.find((row) => row.key === 'DB_PASSWORD')!;
      expect(SecretBox.isSealed(secret.value)).toBe(true);
      expect(JSON.stringify(rows)).not.toContain('hunter2');
      expect(
        stack.secrets.forRecord(stack.workspaceId, 'variable_set', id).openJson(secret.value as string),
      ).toBe('hunter2');
      expect(rows.find((row) => row.key === 'FEATURES')!.value).toEqual({ search: true });
    });

    it('lists sets with their variables, paged as {items, total, limit, offset}', async () => {
      await create({ name: 'second', selector: 'true', priority: 5, variables: [] }).expect(201);
      const res = await stack.http.get(`${sets()}?limit=1&offset=1`).set(stack.auth).expect(200);
      expect(res.body).toMatchObject({ total: 2, limit: 1, offset: 1 });
      expect(res.body.items).toEqual([
        expect.objectContaining({ name: 'second', priority: 5, variables: [] }),
      ]);
      const first = await stack.http.get(sets()).set(stack.auth).expect(200);
      expect(first.body.items[0]).toMatchObject({ id, variables: expect.any(Array) });
    });

    it('updates given fields only (202); variables, when given, replace them all, and a GET can be sent back', async () => {
      const before = (await stack.http.get(`${sets()}/${id}`).set(stack.auth).expect(200)).body;
      const sealedBefore = (await stored(id)).find((row) => row.key === 'DB_PASSWORD')!.value;
      const res = await stack.http
        .put(`${sets()}/${id}`)
        .set(stack.auth)
        .send({ priority: 7, description: 'EU regions' })
        .expect(202);
      expect(res.body).toMatchObject({ id, name: 'eu-defaults', priority: 7, description: 'EU regions' });
      expect(res.body).not.toHaveProperty('variables');

      const sentBack = before.variables.filter((v: { key: string }) => v.key !== 'TAGS');
      await stack.http.put(`${sets()}/${id}`).set(stack.auth).send({ variables: sentBack }).expect(202);
      const after = (await stack.http.get(`${sets()}/${id}`).set(stack.auth).expect(200)).body;
      expect(after.variables).toEqual(sentBack);
      expect(after.selector).toBe(before.selector);
      expect(Date.parse(after.updatedAt)).toBeGreaterThan(Date.parse(before.updatedAt));
      expect((await stored(id)).find((row) => row.key === 'DB_PASSWORD')!.value).toBe(sealedBefore);
    });

    it('deletes it (202 with the set), after which it is 404', async () => {
      const doomed = (await create({ name: 'doomed', selector: 'true', variables: [{ key: 'K', value: 1 }] }))
        .body.id;
      const res = await stack.http.delete(`${sets()}/${doomed}`).set(stack.auth).expect(202);
      expect(res.body).toMatchObject({ id: doomed, name: 'doomed' });
      expectProblem(await stack.http.get(`${sets()}/${doomed}`).set(stack.auth), 404, 'not_found');
      expect(await stored(doomed)).toEqual([]);
      expectProblem(await stack.http.delete(`${sets()}/${doomed}`).set(stack.auth), 404, 'not_found');
    });

    it("answers 404 for another workspace's set, and changes nothing", async () => {
      const theirs = `/v1/workspaces/${other.id}/variable-sets/${id}`;
      expectProblem(await stack.http.get(theirs).set(other.auth), 404, 'not_found');
      for (const send of [
        () => stack.http.put(theirs).set(other.auth).send({ name: 'taken' }),
        () => stack.http.delete(theirs).set(other.auth),
      ])
        expectProblem(await refusedWithoutWrites(send), 404, 'not_found');
      const listed = await stack.http
        .get(`/v1/workspaces/${other.id}/variable-sets`)
        .set(other.auth)
        .expect(200);
      expect(listed.body).toMatchObject({ items: [], total: 0 });
      expectProblem(
        await stack.http.get(`/v1/workspaces/${other.id}/variable-sets`).set(stack.auth),
        404,
        'not_found',
      );
    });
  });

  describe('validation: 400 and nothing written', () => {
    const valid = { name: 'valid', selector: 'true', variables: [{ key: 'K', value: 'v' }] };

    it.each([
      ['a selector that is not CEL', { selector: 'resource.(' }, 'body.selector', 'invalid CEL'],
      [
        'a selector over an unknown field',
        { selector: 'resource.knd == "x"' },
        'body.selector',
        'invalid CEL',
      ],
      [
        'a selector with matches()',
        { selector: 'resource.name.matches("a+")' },
        'body.selector',
        'matches()',
      ],
      ['no selector', { selector: undefined }, 'body.selector', /./],
      ['no variables', { variables: undefined }, 'body.variables', /./],
      ['an empty name', { name: ' ' }, 'body.name', /./],
      ['a name of 201 characters', { name: 'n'.repeat(201) }, 'body.name', /./],
      [
        'a key of 256 characters',
        { variables: [{ key: 'k'.repeat(256), value: 1 }] },
        'body.variables[0].key',
        /./,
      ],
      ['an empty key', { variables: [{ key: '', value: 1 }] }, 'body.variables[0].key', /./],
      [
        'a duplicate key',
        {
          variables: [
            { key: 'K', value: 1 },
            { key: 'K', value: 2 },
          ],
        },
        'body.variables[1].key',
        'duplicate',
      ],
      ['a null value', { variables: [{ key: 'K', value: null }] }, 'body.variables[0].value', 'null'],
      [
        "Ctrlplane's hashed sensitive value",
        { variables: [{ key: 'K', value: { valueHash: 'abc' } }] },
        'body.variables[0].value',
        'hashed',
      ],
      [
        'a reference that names neither a record nor a relationship',
        { variables: [{ key: 'K', value: { reference: 'the cluster', path: ['name'] } }] },
        'body.variables[0].value.reference',
        /./,
      ],
      [
        'a reference with an empty path',
        { variables: [{ key: 'K', value: { reference: 'resource', path: [] } }] },
        'body.variables[0].value.path',
        /./,
      ],
      [
        'keeping a sensitive value none is stored for',
        { variables: [{ key: 'K', value: { sensitive: true } }] },
        'body.variables[0].value',
        'no stored sensitive value',
      ],
      ['a priority that is not an integer', { priority: 1.5 }, 'body.priority', /./],
      [
        '501 variables',
        { variables: Array.from({ length: 501 }, (_, i) => ({ key: `K${i}`, value: i })) },
        'body.variables',
        /500/,
      ],
    ] as [string, object, string, string | RegExp][])('refuses %s', async (_, change, path, message) => {
      const res = await refusedWithoutWrites(() => create({ ...valid, ...change }));
      expectFieldError(res, path, message);
    });

    it('refuses a bad update the same way, leaving the set as it was', async () => {
      const id = (await create(valid).expect(201)).body.id;
      for (const body of [
        { selector: 'deployment.slg == "x"' },
        {
          variables: [
            { key: 'A', value: 1 },
            { key: 'B', value: { valueHash: 'x' } },
          ],
        },
        { name: '' },
      ]) {
        const res = await refusedWithoutWrites(() =>
          stack.http.put(`${sets()}/${id}`).set(stack.auth).send(body),
        );
        expect(res.status).toBe(400);
      }
    });

    it('accepts 500 variables', async () => {
      const variables = Array.from({ length: 500 }, (_, i) => ({ key: `K${i}`, value: i }));
      const id = (await create({ ...valid, name: 'large', variables }).expect(201)).body.id;
      expect(await stored(id)).toHaveLength(500);
    });

    it('answers 404 for an update of a set that does not exist', async () => {
      const res = await refusedWithoutWrites(() =>
        stack.http
          .put(`${sets()}/0190aaaa-0000-7000-8000-0000000000ff`)
          .set(stack.auth)
          .send({ priority: 1 }),
      );
      expectProblem(res, 404, 'not_found');
    });
  });
});
