import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { RemoteRefusal, remoteJson } from '../../activities/agents/remote';
import { Egress } from '../../activities/egress';

/** Push agents' error classes: refusals end the job, everything else is retried by the activity. */
describe('remote calls of push agents', () => {
  let server: http.Server;
  let url: string;
  // This stand-in for a remote service listens on loopback, which the egress policy must allow.
  const egress = new Egress({ allow: ['127.0.0.1'], deny: [] });
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const status = Number(new URL(req.url!, 'http://x').searchParams.get('status'));
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(status === 204 ? undefined : JSON.stringify({ message: `answer ${status}`, ok: status < 300 }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/thing`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('answers the parsed body, or nothing for an empty one', async () => {
    await expect(remoteJson(egress, 'Svc', `${url}?status=200`)).resolves.toEqual({
      message: 'answer 200',
      ok: true,
    });
    await expect(remoteJson(egress, 'Svc', `${url}?status=204`)).resolves.toBeUndefined();
  });

  it.each([400, 401, 403, 404, 409, 422])(
    'treats %i as a refusal, with the remote message',
    async (status) => {
      const error = await remoteJson(egress, 'Svc', `${url}?status=${status}`).catch(
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(RemoteRefusal);
      expect(error).toMatchObject({ status, message: `Svc GET /thing answered ${status}: answer ${status}` });
    },
  );

  it.each([408, 429, 500, 502, 503])('throws %i as an error to retry', async (status) => {
    const error = await remoteJson(egress, 'Svc', `${url}?status=${status}`).catch(
      (caught: unknown) => caught,
    );
    expect(error).not.toBeInstanceOf(RemoteRefusal);
    expect((error as Error).message).toBe(`Svc GET /thing answered ${status}: answer ${status}; retrying`);
  });

  it('throws a network failure as an error to retry', async () => {
    const error = await remoteJson(egress, 'Svc', 'http://127.0.0.1:1/nothing').catch(
      (caught: unknown) => caught,
    );
    expect(error).not.toBeInstanceOf(RemoteRefusal);
    expect((error as Error).message).toMatch(/^Svc GET \/nothing failed: /);
  });
});
