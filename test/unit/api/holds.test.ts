import { randomUUID } from 'node:crypto';
import { serverFreeApp, type ServerFreeApp } from './serverFreeApp';

/**
 * The holds routes (api/routes/holds.ts; docs/behaviour.md "Holds and freezes") through the real
 * app with fake stores: 201 with the hold as shown, the body's validation, 404 and the list filter.
 */
describe('holds routes (no servers)', () => {
  let api: ServerFreeApp;
  const holds = () => `/v1/workspaces/${api.workspaceId}/holds`;
  const block = { selector: 'environment.name == "production"', effect: 'block', reason: 'incident 12' };

  beforeEach(() => {
    api = serverFreeApp();
  });

  it('creates a hold (201), shown with who created it, and reads it back', async () => {
    const created = await api.http.post(holds()).set(api.operator).send(block).expect(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      workspaceId: api.workspaceId,
      selector: block.selector,
      effect: 'block',
      reason: 'incident 12',
      active: true,
      createdBy: { id: expect.any(String), name: 'operator key' },
      createdAt: expect.any(String),
    });
    const read = await api.http.get(`${holds()}/${created.body.id}`).set(api.operator).expect(200);
    expect(read.body).toEqual(created.body);
    expect(api.world.audit).toEqual([
      expect.objectContaining({ action: 'hold.created', record: { type: 'hold', id: created.body.id } }),
    ]);
  });

  it('shows a hold past its expiry as inactive', async () => {
    const past = new Date(Date.now() - 60_000).toISOString();
    const created = await api.http
      .post(holds())
      .set(api.operator)
      .send({ ...block, expiresAt: past })
      .expect(201);
    expect(created.body).toMatchObject({ active: false, expiresAt: past });
  });

  it.each([
    [
      'a selector over a scope holds do not read',
      { ...block, selector: 'jobAgent.name == "x"' },
      'body.selector',
    ],
    ['an effect that is neither block nor pin', { ...block, effect: 'pause' }, 'body.effect'],
    ['an empty reason', { ...block, reason: '   ' }, 'body.reason'],
    ['a version that is not a UUID', { ...block, effect: 'pin', versionId: 'v1' }, 'body.versionId'],
    [
      'a schedule without its duration',
      { ...block, schedule: { rrule: 'FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=24' } },
      'body.schedule.durationSeconds',
    ],
    ['a field no hold has', { ...block, until: 'tomorrow' }, 'body.until'],
  ])('answers 400 problem+json for %s, naming the field', async (_, body, path) => {
    const res = await api.http.post(holds()).set(api.operator).send(body).expect(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(res.body.errors).toEqual([{ path, message: expect.any(String) }]);
  });

  it('answers 404 for a hold it does not know, and for one of another workspace', async () => {
    const unknown = await api.http.get(`${holds()}/${randomUUID()}`).set(api.operator).expect(404);
    expect(unknown.body).toMatchObject({ status: 404, code: 'not_found' });
    const created = await api.http.post(holds()).set(api.operator).send(block).expect(201);
    await api.http
      .get(`/v1/workspaces/${api.otherWorkspaceId}/holds/${created.body.id}`)
      .set(api.stranger)
      .expect(404);
  });

  it('deletes a hold (200 with the hold), then answers 404 for it', async () => {
    const created = await api.http.post(holds()).set(api.operator).send(block).expect(201);
    const deleted = await api.http.delete(`${holds()}/${created.body.id}`).set(api.operator).expect(200);
    expect(deleted.body).toEqual(created.body);
    await api.http.delete(`${holds()}/${created.body.id}`).set(api.operator).expect(404);
  });

  it('lists by effect, paged, and refuses a filter it does not know (400)', async () => {
    await api.http.post(holds()).set(api.operator).send(block).expect(201);
    await api.http
      .post(holds())
      .set(api.operator)
      .send({ ...block, effect: 'pin', versionId: randomUUID() })
      .expect(201);
    const pins = await api.http.get(`${holds()}?effect=pin&limit=5`).set(api.operator).expect(200);
    expect(pins.body).toMatchObject({ total: 1, limit: 5, offset: 0, items: [{ effect: 'pin' }] });
    const bad = await api.http.get(`${holds()}?active=maybe`).set(api.operator).expect(400);
    expect(bad.body.errors).toEqual([{ path: 'query.active', message: expect.any(String) }]);
  });
});
