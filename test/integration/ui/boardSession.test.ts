import { createHash } from 'node:crypto';
import { recordsApi } from '../../helpers/orchestration';
import { agentKey } from '../../helpers/pull';
import { startTestStack, type TestStack } from '../../helpers/stack';

const ADMIN_TOKEN = 'board-session-admin-token';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

interface BoardCookie {
  name: string;
  value: string;
  /** Lower case: `path=/ui`, `secure`, … */
  attributes: string[];
  /** The `Cookie` header that sends it back. */
  header: string;
}

/** The one cookie a board response set: its name, value and attributes. */
function boardCookie(headers: Record<string, unknown>): BoardCookie {
  const cookies = (headers['set-cookie'] ?? []) as string[];
  expect(cookies).toHaveLength(1);
  const [pair, ...attributes] = cookies[0]!.split(';').map((part) => part.trim());
  const name = pair!.slice(0, pair!.indexOf('='));
  const value = pair!.slice(name.length + 1);
  return { name, value, attributes: attributes.map((a) => a.toLowerCase()), header: `${name}=${value}` };
}

/**
 * docs/security.md "The board's session": the board's cookie holds a server-side session's id,
 * never the key; the session is bound to its key, ends at sign-out, at the key's revocation and at
 * expiry; `Secure` and the request's own
 * origin believe forwarding headers from trusted proxies only; board writes refuse other sites.
 */
describe('rollout board session (/ui)', () => {
  /** Its peer (supertest, on loopback) is no trusted proxy. */
  let stack: TestStack;
  /** Its peer is the trusted proxy. */
  let proxied: TestStack;

  beforeAll(async () => {
    stack = await startTestStack({ worker: false, adminToken: ADMIN_TOKEN });
    proxied = await startTestStack({
      worker: false,
      transport: { trustedProxies: ['127.0.0.1', '::1'], allowInsecurePull: false },
    });
  });
  afterAll(async () => {
    await stack?.close();
    await proxied?.close();
  });

  const signIn = async (on: TestStack, apiKey: string, headers: Record<string, string> = {}) => {
    const response = await on.http.post('/ui/session').set(headers).send({ apiKey });
    expect(response.status).toBe(204);
    return boardCookie(response.headers);
  };
  const board = (on: TestStack, cookie: BoardCookie) =>
    on.http.get('/ui/board.json').set('cookie', cookie.header);
  const sql = <T extends object[]>(text: string, values: unknown[] = []) =>
    stack.orm.em.fork().getConnection().execute<T>(text, values);
  /** The stored session of a cookie's id, found by its hash. */
  const sessionRows = (sessionId: string) =>
    sql<{ api_key_id: string; workspace_id: string; lifetime_s: number; ended: boolean }[]>(
      `SELECT api_key_id, workspace_id, extract(epoch FROM expires_at - created_at)::int AS lifetime_s,
              ended_at IS NOT NULL AS ended
         FROM board_session WHERE id_hash = ?`,
      [sha256(sessionId)],
    );
  const issueKey = async (name: string) =>
    (
      await stack.http
        .post(`/v1/admin/workspaces/${stack.workspaceId}/api-keys`)
        .set('authorization', `Bearer ${ADMIN_TOKEN}`)
        .send({ name })
    ).body as { id: string; key: string };

  it('keeps an opaque session id in the cookie, never the key, and stores only its hash', async () => {
    const { id: keyId, key } = await issueKey('board user');
    const before = Date.now();
    const cookie = await signIn(stack, key);
    expect(cookie.value).not.toBe(key);
    expect(cookie.value).not.toContain(key);
    expect(cookie.value).not.toContain(key.slice(4));
    expect(cookie.name).toBe('flightdeck_session');
    expect(cookie.attributes).toEqual(expect.arrayContaining(['path=/ui', 'samesite=strict', 'httponly']));
    const expires = Date.parse(cookie.attributes.find((a) => a.startsWith('expires='))!.slice(8));
    expect(Math.abs(expires - (before + 12 * 3600_000))).toBeLessThan(60_000);

    const read = await board(stack, cookie);
    expect(read.status).toBe(200);
    expect(read.body.workspaceId).toBe(stack.workspaceId);
    expect(await sessionRows(cookie.value)).toEqual([
      { api_key_id: keyId, workspace_id: stack.workspaceId, lifetime_s: 12 * 3600, ended: false },
    ]);
    const stored = await sql<{ id_hash: string }[]>('SELECT id_hash FROM board_session');
    expect(stored.map((row) => row.id_hash)).not.toContain(cookie.value);

    // The key itself in a cookie, as the board kept it before, signs nobody in.
    for (const forged of [`flightdeck_key=${key}`, `flightdeck_session=${key}`]) {
      expect((await stack.http.get('/ui/board.json').set('cookie', forged)).status).toBe(401);
    }
  });

  it('ends the session server-side at sign-out: the same cookie, replayed, is refused', async () => {
    const cookie = await signIn(stack, stack.apiKey);
    expect((await board(stack, cookie)).status).toBe(200);
    const signOut = await stack.http.delete('/ui/session').set('cookie', cookie.header);
    expect(signOut.status).toBe(204);
    expect(boardCookie(signOut.headers).value).toBe('');
    const replayed = await board(stack, cookie);
    expect(replayed.status).toBe(401);
    expect(replayed.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(await sessionRows(cookie.value)).toMatchObject([{ ended: true }]);
    // The session ended was this browser's only: another sign-in of the same key still reads the board.
    const other = await signIn(stack, stack.apiKey);
    expect((await board(stack, other)).status).toBe(200);
  });

  it("ends a key's sessions when the key is revoked", async () => {
    const { id, key } = await issueKey('to revoke');
    const cookie = await signIn(stack, key);
    const hold = { selector: 'deployment.slug == "web"', effect: 'block', reason: 'before the revocation' };
    const asSession = { cookie: cookie.header };
    expect((await stack.http.post('/ui/actions/holds').set(asSession).send(hold)).status).toBe(201);
    const revoked = await stack.http
      .delete(`/v1/admin/workspaces/${stack.workspaceId}/api-keys/${id}`)
      .set('authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(revoked.status).toBe(204);
    expect((await board(stack, cookie)).status).toBe(401);
    const refused = await stack.http
      .post('/ui/actions/holds')
      .set(asSession)
      .send({ ...hold, reason: 'after the revocation' });
    expect(refused.status).toBe(401);
    expect((await stack.http.post('/ui/session').send({ apiKey: key })).status).toBe(401);
  });

  it('refuses an expired session, and purges expired sessions at a later sign-in', async () => {
    const cookie = await signIn(stack, stack.apiKey);
    await sql("UPDATE board_session SET expires_at = now() - interval '1 second' WHERE id_hash = ?", [
      sha256(cookie.value),
    ]);
    expect((await board(stack, cookie)).status).toBe(401);
    expect(await sessionRows(cookie.value)).toHaveLength(1);
    await signIn(stack, stack.apiKey);
    expect(await sessionRows(cookie.value)).toEqual([]);
  });

  it("authorizes the session's key on every request, as the API does: an agent's key is refused", async () => {
    // No sign-in opens a session for an agent's key (403 there); a session bound to one anyway is refused when used.
    const agentId = await recordsApi(stack).agent('board-session-puller', 'http-pull');
    const key = await agentKey(stack, agentId);
    const signInAsAgent = await stack.http.post('/ui/session').send({ apiKey: key });
    expect(signInAsAgent.status).toBe(403);
    expect(signInAsAgent.body.code).toBe('agent_scope');
    const cookie = await signIn(stack, stack.apiKey);
    await sql(
      `UPDATE board_session SET api_key_id = (SELECT id FROM api_key WHERE key_hash = ?) WHERE id_hash = ?`,
      [sha256(key), sha256(cookie.value)],
    );
    const read = await board(stack, cookie);
    expect(read.status).toBe(403);
    expect(read.body.code).toBe('agent_scope');
  });

  describe('the Secure flag', () => {
    const secure = (cookie: { attributes: string[] }) => cookie.attributes.includes('secure');

    it('believes X-Forwarded-Proto and Forwarded from a trusted proxy only', async () => {
      // From a peer that is no trusted proxy, a header saying https is the client's word: no Secure.
      expect(secure(await signIn(stack, stack.apiKey, { 'x-forwarded-proto': 'https' }))).toBe(false);
      expect(secure(await signIn(stack, stack.apiKey, { forwarded: 'for=203.0.113.9;proto=https' }))).toBe(
        false,
      );
      expect(secure(await signIn(stack, stack.apiKey))).toBe(false);
      // From the trusted proxy, its word decides.
      expect(secure(await signIn(proxied, proxied.apiKey, { 'x-forwarded-proto': 'https' }))).toBe(true);
      expect(
        secure(await signIn(proxied, proxied.apiKey, { forwarded: 'for=203.0.113.9;proto=https' })),
      ).toBe(true);
      expect(secure(await signIn(proxied, proxied.apiKey, { 'x-forwarded-proto': 'http' }))).toBe(false);
      expect(secure(await signIn(proxied, proxied.apiKey))).toBe(false);
    });
  });

  describe('cross-site writes', () => {
    const hold = { selector: 'deployment.slug == "api"', effect: 'block', reason: 'from the board' };
    const HOST = 'board.example:8080';

    it('refuses every board write another site sends, sign-in and sign-out included (403 problem+json)', async () => {
      const cookie = await signIn(stack, stack.apiKey);
      const holdsBefore = (await stack.http.get(`/v1/workspaces/${stack.workspaceId}/holds`).set(stack.auth))
        .body.total as number;
      const writes = [
        ['post', '/ui/actions/holds', hold],
        ['delete', '/ui/actions/holds/0190d5a8-0000-7000-8000-000000000000', undefined],
        ['post', '/ui/actions/approve', { releaseId: '0190d5a8-0000-7000-8000-000000000000' }],
        ['post', '/ui/actions/skips', {}],
        ['post', '/ui/session', { apiKey: stack.apiKey }],
        ['delete', '/ui/session', undefined],
      ] as const;
      const crossSite = [
        { 'sec-fetch-site': 'cross-site' },
        { 'sec-fetch-site': 'same-site' },
        { origin: 'https://evil.example' },
        { origin: 'null' },
        // Another port, another scheme: another origin.
        { origin: 'http://board.example:8081' },
        { origin: 'https://board.example:8080' },
        { origin: `http://${HOST}`, 'sec-fetch-site': 'cross-site' },
      ];
      for (const [method, path, body] of writes) {
        for (const headers of crossSite) {
          const response = await stack.http[method](path)
            .set({ host: HOST, cookie: cookie.header, ...headers })
            .send(body);
          expect({ method, path, headers, status: response.status }).toEqual({
            method,
            path,
            headers,
            status: 403,
          });
          expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
          expect(response.body.code).toBe('cross_site');
          expect(response.headers['set-cookie']).toBeUndefined();
        }
      }
      // Nothing was written, and the cross-site sign-out ended nothing.
      expect(
        (await stack.http.get(`/v1/workspaces/${stack.workspaceId}/holds`).set(stack.auth)).body.total,
      ).toBe(holdsBefore);
      expect((await board(stack, cookie)).status).toBe(200);
    });

    it("accepts the board's own pages and requests without either header (curl)", async () => {
      const cookie = await signIn(stack, stack.apiKey, { host: HOST, origin: `http://${HOST}` });
      const asSession = { host: HOST, cookie: cookie.header };
      for (const headers of [
        { origin: `http://${HOST}`, 'sec-fetch-site': 'same-origin' },
        { 'sec-fetch-site': 'same-origin' },
        { 'sec-fetch-site': 'none' },
        { origin: `http://${HOST}` },
        {},
      ]) {
        const created = await stack.http
          .post('/ui/actions/holds')
          .set({ ...asSession, ...headers })
          .send(hold);
        expect({ headers, status: created.status }).toEqual({ headers, status: 201 });
        const deleted = await stack.http
          .delete(`/ui/actions/holds/${created.body.id as string}`)
          .set({ ...asSession, ...headers });
        expect({ headers, status: deleted.status }).toEqual({ headers, status: 200 });
      }
    });

    it("reads the request's own scheme through trusted proxies only", async () => {
      // A page at https://board.example, through a proxy saying so: only a trusted proxy's word makes it the same origin.
      const page = { host: 'board.example', origin: 'https://board.example', 'x-forwarded-proto': 'https' };
      const untrusted = await stack.http.post('/ui/session').set(page).send({ apiKey: stack.apiKey });
      expect(untrusted.status).toBe(403);
      expect(untrusted.body.code).toBe('cross_site');
      const trusted = await proxied.http.post('/ui/session').set(page).send({ apiKey: proxied.apiKey });
      expect(trusted.status).toBe(204);
    });
  });
});
