import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import {
  ASSIGNMENT_TABLES,
  REDACTED,
  refusedWithoutWrites as refusedIn,
  sqlOf,
  TIMESTAMP_PATTERN as ISO_TIMESTAMP,
} from '../../helpers/recordFixtures';
import { expectFieldError, withoutMessage } from '../../helpers/records';
import { startTestStack, type TestStack } from '../../helpers/stack';

/**
 * Deployment variables and their values over HTTP, nested under their deployment and by the aliases
 * /deployment-variables and /deployment-variable-values: literal, reference and scoped values, sealed
 * secrets, validation, deletion. 401, another workspace's records (404) and duplicate keys (409):
 * contract.test.ts.
 */
describe('deployment variables over HTTP', () => {
  let stack: TestStack;
  const ws = () => `/v1/workspaces/${stack.workspaceId}`;
  const sql = sqlOf(() => stack);
  const query = <T extends object>(text: string, params: unknown[] = []) => sql<T[]>(text, params);
  const refusedWithoutWrites = (send: () => PromiseLike<Response>) =>
    refusedIn(stack, ASSIGNMENT_TABLES, send);

  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.close());

  let checkoutId: string;
  let billingId: string;
  const logLevelId = randomUUID();
  const apiTokenId = randomUUID();
  const valueIds = {
    qa: randomUUID(),
    fallback: randomUUID(),
    reference: randomUUID(),
    token: randomUUID(),
  };
  const variablesOf = (deploymentId: string, base = ws()) => `${base}/deployments/${deploymentId}/variables`;
  const variablePath = (deploymentId: string, variableId: string, base = ws()) =>
    `${variablesOf(deploymentId, base)}/${variableId}`;
  const valuePath = (deploymentId: string, variableId: string, valueId: string, base = ws()) =>
    `${variablePath(deploymentId, variableId, base)}/values/${valueId}`;
  const values: Record<string, Record<string, unknown>> = {};
  let logLevel: Record<string, unknown>;

  async function createDeployment(
    base: string,
    auth: { 'x-api-key': string },
    name: string,
  ): Promise<string> {
    const res = await stack.http
      .post(`${base}/deployments`)
      .set(auth)
      .send({ name, slug: name.toLowerCase() })
      .expect(202);
    return res.body.id;
  }

  beforeAll(async () => {
    checkoutId = await createDeployment(ws(), stack.auth, 'Checkout');
    billingId = await createDeployment(ws(), stack.auth, 'Billing');
  });

  it('creates a variable from default_value and replaces it from defaultValue (202 both)', async () => {
    const created = await stack.http
      .put(variablePath(checkoutId, logLevelId))
      .set(stack.auth)
      .send({ key: 'LOG_LEVEL', description: 'How loud', default_value: 'info' })
      .expect(202);
    expect(created.body).toEqual({
      id: logLevelId,
      deploymentId: checkoutId,
      key: 'LOG_LEVEL',
      description: 'How loud',
      defaultValue: 'info',
      sensitive: false,
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
      message: 'Variable created',
    });

    const replaced = await stack.http
      .put(variablePath(checkoutId, logLevelId))
      .set(stack.auth)
      .send({ key: 'LOG_LEVEL', description: 'How loud the service logs', defaultValue: 'warn' })
      .expect(202);
    expect(replaced.body).toEqual({
      ...created.body,
      description: 'How loud the service logs',
      defaultValue: 'warn',
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
      message: 'Variable updated',
    });
    logLevel = withoutMessage(replaced.body);
    expect(
      await query('SELECT default_value, sensitive FROM deployment_variable WHERE id = ?', [logLevelId]),
    ).toEqual([{ default_value: 'warn', sensitive: false }]);
  });

  it('creates literal, reference and selector-scoped values and replaces one (202 each)', async () => {
    const qa = await stack.http
      .put(valuePath(checkoutId, logLevelId, valueIds.qa))
      .set(stack.auth)
      .send({ priority: 10, value: 'debug', resource_selector: 'resource.metadata["env"] == "qa"' })
      .expect(202);
    expect(qa.body).toEqual({
      id: valueIds.qa,
      deploymentVariableId: logLevelId,
      priority: 10,
      value: 'debug',
      resourceSelector: 'resource.metadata["env"] == "qa"',
      sensitive: false,
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
      message: 'Variable value created',
    });

    const fallback = await stack.http
      .put(valuePath(checkoutId, logLevelId, valueIds.fallback))
      .set(stack.auth)
      .send({ priority: 5, literal_value: 'error' })
      .expect(202);
    expect(fallback.body).toEqual({
      id: valueIds.fallback,
      deploymentVariableId: logLevelId,
      priority: 5,
      value: 'error',
      sensitive: false,
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
      message: 'Variable value created',
    });
    values.fallback = withoutMessage(fallback.body);

    const reference = await stack.http
      .put(valuePath(checkoutId, logLevelId, valueIds.reference))
      .set(stack.auth)
      .send({
        priority: 1,
        reference_value: { reference: 'resource', path: ['metadata', 'log-level'] },
        resourceSelector: 'resource.kind == "service"',
      })
      .expect(202);
    expect(reference.body).toEqual({
      id: valueIds.reference,
      deploymentVariableId: logLevelId,
      priority: 1,
      referenceValue: { reference: 'resource', path: ['metadata', 'log-level'] },
      resourceSelector: 'resource.kind == "service"',
      sensitive: false,
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
      message: 'Variable value created',
    });
    expect(reference.body).not.toHaveProperty('value');
    values.reference = withoutMessage(reference.body);

    const replaced = await stack.http
      .put(valuePath(checkoutId, logLevelId, valueIds.qa))
      .set(stack.auth)
      .send({ priority: 20, value: { level: 'trace', json: true } })
      .expect(202);
    // The replacement names no selector, so the value no longer has one.
    const { resourceSelector: _qaSelector, ...qaWithoutSelector } = qa.body;
    expect(replaced.body).toEqual({
      ...qaWithoutSelector,
      priority: 20,
      value: { level: 'trace', json: true },
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
      message: 'Variable value updated',
    });
    expect(replaced.body).not.toHaveProperty('resourceSelector');
    values.qa = withoutMessage(replaced.body);

    const read = await stack.http
      .get(valuePath(checkoutId, logLevelId, valueIds.qa))
      .set(stack.auth)
      .expect(200);
    expect(read.body).toEqual(values.qa);
  });

  it('refuses a null literal value with 400 and writes nothing', async () => {
    const searchId = await createDeployment(ws(), stack.auth, 'Search');
    const variableId = randomUUID();
    await stack.http
      .put(variablePath(searchId, variableId))
      .set(stack.auth)
      .send({ key: 'OPTIONAL_FLAG' })
      .expect(202);
    const res = await refusedWithoutWrites(() =>
      stack.http
        .put(valuePath(searchId, variableId, randomUUID()))
        .set(stack.auth)
        .send({ priority: 1, value: null })
        .expect(400),
    );
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain('body.value');
  });

  it('reads a variable with its values, highest priority first', async () => {
    const res = await stack.http.get(variablePath(checkoutId, logLevelId)).set(stack.auth).expect(200);
    expect(res.body).toEqual({
      variable: logLevel,
      values: [values.qa, values.fallback, values.reference],
    });
  });

  it('seals a sensitive default and value, shows them as {"sensitive": true}, and keeps them on the marker', async () => {
    const checkoutSecrets = () => stack.secrets.forRecord(stack.workspaceId, 'deployment', checkoutId);
    const variable = await stack.http
      .put(variablePath(checkoutId, apiTokenId))
      .set(stack.auth)
      .send({ key: 'API_TOKEN', default_value: 'default-secret', sensitive: true })
      .expect(202);
    expect(variable.body).toMatchObject({ key: 'API_TOKEN', defaultValue: REDACTED, sensitive: true });
    const [storedVariable] = await query<{ default_value: string }>(
      'SELECT default_value FROM deployment_variable WHERE id = ?',
      [apiTokenId],
    );
    expect(storedVariable!.default_value).toMatch(/^fd2:/);
    expect(checkoutSecrets().openJson(storedVariable!.default_value)).toBe('default-secret');

    const value = await stack.http
      .put(valuePath(checkoutId, apiTokenId, valueIds.token))
      .set(stack.auth)
      .send({ priority: 1, value: 'value-secret' })
      .expect(202);
    expect(value.body).toMatchObject({ value: REDACTED, sensitive: true });
    const sealedValue = async () =>
      (
        await query<{ value: string }>('SELECT value FROM deployment_variable_value WHERE id = ?', [
          valueIds.token,
        ])
      )[0]!.value;
    const sealed = await sealedValue();
    expect(sealed).toMatch(/^fd2:/);
    expect(checkoutSecrets().openJson(sealed)).toBe('value-secret');

    const keptValue = await stack.http
      .put(valuePath(checkoutId, apiTokenId, valueIds.token))
      .set(stack.auth)
      .send({ priority: 3, value: REDACTED, sensitive: true })
      .expect(202);
    expect(keptValue.body).toMatchObject({ priority: 3, value: REDACTED, sensitive: true });
    expect(await sealedValue()).toBe(sealed);

    const keptDefault = await stack.http
      .put(variablePath(checkoutId, apiTokenId))
      .set(stack.auth)
      .send({
        key: 'API_TOKEN',
        description: 'Token for the payment API',
        defaultValue: REDACTED,
        sensitive: true,
      })
      .expect(202);
    expect(keptDefault.body).toMatchObject({
      defaultValue: REDACTED,
      description: 'Token for the payment API',
    });
    expect(await query('SELECT default_value FROM deployment_variable WHERE id = ?', [apiTokenId])).toEqual([
      { default_value: storedVariable!.default_value },
    ]);

    const text = JSON.stringify(
      (await stack.http.get(variablePath(checkoutId, apiTokenId)).set(stack.auth).expect(200)).body,
    );
    expect(text).not.toMatch(/default-secret|value-secret|fd1:/);
  });

  it('refuses {"sensitive": true} when nothing is stored, and writes nothing', async () => {
    const value = await refusedWithoutWrites(() =>
      stack.http
        .put(valuePath(checkoutId, apiTokenId, randomUUID()))
        .set(stack.auth)
        .send({ priority: 1, value: REDACTED, sensitive: true }),
    );
    expectFieldError(value, 'body.value');
    const variable = await refusedWithoutWrites(() =>
      stack.http
        .put(variablePath(checkoutId, randomUUID()))
        .set(stack.auth)
        .send({ key: 'NEW_SECRET', defaultValue: REDACTED, sensitive: true }),
    );
    expectFieldError(variable, 'body.defaultValue');
  });

  it('lists the variables of a deployment as a page of {variable, values}, by key', async () => {
    const res = await stack.http.get(variablesOf(checkoutId)).set(stack.auth).expect(200);
    expect(res.body).toMatchObject({ total: 2, limit: 50, offset: 0 });
    expect(res.body.items).toHaveLength(2);
    expect(res.body.items[0]).toEqual({
      variable: expect.objectContaining({ id: apiTokenId, key: 'API_TOKEN' }),
      values: [expect.objectContaining({ id: valueIds.token, value: REDACTED })],
    });
    expect(res.body.items[1]).toEqual({
      variable: logLevel,
      values: [values.qa, values.fallback, values.reference],
    });
    const empty = await stack.http.get(variablesOf(billingId)).set(stack.auth).expect(200);
    expect(empty.body).toEqual({ items: [], total: 0, limit: 50, offset: 0 });
  });

  it('serves the same records under /deployment-variables and /deployment-variable-values', async () => {
    const regionId = randomUUID();
    const regionValueId = randomUUID();
    const created = await stack.http
      .put(`${ws()}/deployment-variables/${regionId}`)
      .set(stack.auth)
      .send({ deploymentId: billingId, key: 'REGION', defaultValue: 'eu' })
      .expect(202);
    expect(created.body).toMatchObject({
      id: regionId,
      deploymentId: billingId,
      key: 'REGION',
      defaultValue: 'eu',
      message: 'Variable created',
    });
    const variable = withoutMessage(created.body);
    const alias = await stack.http
      .get(`${ws()}/deployment-variables/${regionId}`)
      .set(stack.auth)
      .expect(200);
    expect(alias.body).toEqual({ variable, values: [] });

    const value = await stack.http
      .put(`${ws()}/deployment-variable-values/${regionValueId}`)
      .set(stack.auth)
      .send({ deploymentVariableId: regionId, priority: 2, value: 'us' })
      .expect(202);
    expect(value.body).toMatchObject({
      id: regionValueId,
      deploymentVariableId: regionId,
      priority: 2,
      value: 'us',
      message: 'Variable value created',
    });
    const replaced = await stack.http
      .put(`${ws()}/deployment-variable-values/${regionValueId}`)
      .set(stack.auth)
      .send({ deploymentVariableId: regionId, priority: 4, value: 'ap' })
      .expect(202);
    expect(replaced.body).toMatchObject({ priority: 4, value: 'ap', message: 'Variable value updated' });
    const replacedValue = withoutMessage(replaced.body);

    const viaAlias = await stack.http
      .get(`${ws()}/deployment-variable-values/${regionValueId}`)
      .set(stack.auth)
      .expect(200);
    const viaNested = await stack.http
      .get(valuePath(billingId, regionId, regionValueId))
      .set(stack.auth)
      .expect(200);
    expect(viaAlias.body).toEqual(replacedValue);
    expect(viaNested.body).toEqual(replacedValue);
    const nested = await stack.http.get(variablePath(billingId, regionId)).set(stack.auth).expect(200);
    expect(nested.body).toEqual({ variable, values: [replacedValue] });

    const deletedValue = await stack.http
      .delete(`${ws()}/deployment-variable-values/${regionValueId}`)
      .set(stack.auth)
      .expect(202);
    expect(deletedValue.body).toEqual({ id: regionValueId, message: 'Variable value deleted' });
    await stack.http.get(`${ws()}/deployment-variable-values/${regionValueId}`).set(stack.auth).expect(404);
    const deletedVariable = await stack.http
      .delete(`${ws()}/deployment-variables/${regionId}`)
      .set(stack.auth)
      .expect(202);
    expect(deletedVariable.body).toEqual({ id: regionId, message: 'Variable deleted' });
    await stack.http.get(`${ws()}/deployment-variables/${regionId}`).set(stack.auth).expect(404);
  });

  it.each([
    [
      'both value and reference_value',
      { value: 'x', reference_value: { reference: 'resource', path: ['name'] } },
      'body.reference_value',
    ],
    ['neither value nor reference', { priority: 1 }, 'body.value'],
    [
      'a reference that names neither a record nor a relationship',
      { reference_value: { reference: 'the cluster', path: ['name'] } },
      'body.reference_value.reference',
    ],
    [
      'a reference with an empty path',
      { referenceValue: { reference: 'resource', path: [] } },
      'body.referenceValue.path',
    ],
    ['a fractional priority', { priority: 1.5, value: 'x' }, 'body.priority'],
    ['a sensitive flag that is not a boolean', { value: 'x', sensitive: 'yes' }, 'body.sensitive'],
  ])('answers 400 for a value with %s, with its field path, and writes nothing', async (_, body, path) => {
    const res = await refusedWithoutWrites(() =>
      stack.http
        .put(valuePath(checkoutId, logLevelId, randomUUID()))
        .set(stack.auth)
        .send(body),
    );
    expectFieldError(res, path);
  });

  it.each([
    ['resource_selector', 'resource.knd == "x"', 'invalid CEL: line 1, column 10: No such key: knd'],
    ['resourceSelector', 'resource.kind ==', 'invalid CEL: line 1, column 17: Unexpected token: EOF'],
  ])(
    'answers 400 for a value whose %s is not valid CEL, naming the position',
    async (field, selector, message) => {
      const res = await refusedWithoutWrites(() =>
        stack.http
          .put(valuePath(checkoutId, logLevelId, randomUUID()))
          .set(stack.auth)
          .send({ value: 'x', [field]: selector }),
      );
      expectFieldError(res, `body.${field}`, message);
    },
  );

  it.each([
    ['an empty key', 'nested', { key: '' }, 'body.key'],
    ['a description that is not a string', 'nested', { key: 'K', description: 7 }, 'body.description'],
    ['no deploymentId on the alias', 'alias', { key: 'K' }, 'body.deploymentId'],
    [
      'a deploymentId on the alias that is not a uuid',
      'alias',
      { key: 'K', deploymentId: 'checkout' },
      'body.deploymentId',
    ],
  ] as const)(
    'answers 400 for a variable with %s, with its field path, and writes nothing',
    async (_, form, body, path) => {
      const id = randomUUID();
      const res = await refusedWithoutWrites(() =>
        form === 'nested'
          ? stack.http.put(variablePath(checkoutId, id)).set(stack.auth).send(body)
          : stack.http.put(`${ws()}/deployment-variables/${id}`).set(stack.auth).send(body),
      );
      expectFieldError(res, path);
    },
  );

  it('answers 400 for an alias value without deploymentVariableId, and writes nothing', async () => {
    const res = await refusedWithoutWrites(() =>
      stack.http
        .put(`${ws()}/deployment-variable-values/${randomUUID()}`)
        .set(stack.auth)
        .send({ value: 'x' }),
    );
    expectFieldError(res, 'body.deploymentVariableId');
  });

  it('answers 409 wrong_parent when a variable is PUT under another deployment, and writes nothing', async () => {
    const moved = await refusedWithoutWrites(() =>
      stack.http.put(variablePath(billingId, logLevelId)).set(stack.auth).send({ key: 'LOG_LEVEL' }),
    );
    expect(moved.status).toBe(409);
    expect(moved.body.code).toBe('wrong_parent');
  });

  it('accepts the same key in another deployment', async () => {
    const res = await stack.http
      .put(variablePath(billingId, randomUUID()))
      .set(stack.auth)
      .send({ key: 'LOG_LEVEL', default_value: 'info' })
      .expect(202);
    expect(res.body).toMatchObject({ deploymentId: billingId, key: 'LOG_LEVEL', defaultValue: 'info' });
  });

  it('deletes a value and a variable with 202, the variable taking its values along', async () => {
    const value = await stack.http
      .delete(valuePath(checkoutId, logLevelId, valueIds.fallback))
      .set(stack.auth)
      .expect(202);
    expect(value.body).toEqual({ id: valueIds.fallback, message: 'Variable value deleted' });
    await stack.http
      .get(valuePath(checkoutId, logLevelId, valueIds.fallback))
      .set(stack.auth)
      .expect(404);

    const variable = await stack.http
      .delete(variablePath(checkoutId, logLevelId))
      .set(stack.auth)
      .expect(202);
    expect(variable.body).toEqual({ id: logLevelId, message: 'Variable deleted' });
    await stack.http.get(variablePath(checkoutId, logLevelId)).set(stack.auth).expect(404);
    expect(
      await query('SELECT id FROM deployment_variable_value WHERE variable_id = ?', [logLevelId]),
    ).toEqual([]);
    const list = await stack.http.get(variablesOf(checkoutId)).set(stack.auth).expect(200);
    expect(list.body.items.map((item: { variable: { key: string } }) => item.variable.key)).toEqual([
      'API_TOKEN',
    ]);
  });
});
