import { createVerify } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake of the GitHub REST endpoints the workflow runner uses, with GitHub's documented shapes:
 * installation tokens (the app JWT is verified with the app's public key), workflow dispatch,
 * workflow runs (list, get, cancel). It asserts the credentials and the JSON body, and can be told
 * to answer the next calls of an endpoint with an error status.
 */

export interface FakeRun {
  id: number;
  name: string;
  display_title: string;
  status: 'queued' | 'in_progress' | 'completed';
  conclusion: string | null;
  html_url: string;
  created_at: string;
  workflow_id: number;
  event: 'workflow_dispatch';
}

export interface RecordedRequest {
  method: string;
  path: string;
  authorization?: string;
  body?: unknown;
}

type Endpoint = 'token' | 'dispatch' | 'runs' | 'run' | 'cancel';

export interface FakeGithubOptions {
  app?: { appId: number; installationId: number; publicKey: string };
  /** A personal or installation token accepted as is. */
  token?: string;
}

export const INSTALLATION_TOKEN = 'ghs_fakeInstallationToken';

function verifyJwt(jwt: string, publicKey: string): { iss?: string; exp?: number } | undefined {
  const [header, payload, signature] = jwt.split('.');
  if (!header || !payload || !signature) return undefined;
  const valid = createVerify('RSA-SHA256')
    .update(`${header}.${payload}`)
    .verify(publicKey, Buffer.from(signature, 'base64url'));
  return valid
    ? (JSON.parse(Buffer.from(payload, 'base64url').toString()) as { iss?: string; exp?: number })
    : undefined;
}

export class FakeGithub {
  readonly runs: FakeRun[] = [];
  readonly requests: RecordedRequest[] = [];
  private readonly failures = new Map<Endpoint, number[]>();
  private readonly server: http.Server;
  private nextRunId = 9_000_001;
  url = '';

  constructor(private readonly options: FakeGithubOptions) {
    this.server = http.createServer((req, res) => void this.handle(req, res));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.closeAllConnections();
      this.server.close(() => resolve());
    });
  }

  /** The next calls of `endpoint` answer these statuses, one each, before it works again. */
  failNext(endpoint: Endpoint, ...statuses: number[]): void {
    this.failures.set(endpoint, [...(this.failures.get(endpoint) ?? []), ...statuses]);
  }

  setRun(id: number, state: Pick<FakeRun, 'status' | 'conclusion'>): void {
    Object.assign(
      this.runs.find((run) => run.id === id)!,
      state,
    );
  }

  requestsTo(fragment: string): RecordedRequest[] {
    return this.requests.filter((request) => request.path.includes(fragment));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const url = new URL(req.url ?? '/', 'http://fake');
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname + url.search,
      authorization: req.headers.authorization,
      body: text ? JSON.parse(text) : undefined,
    };
    this.requests.push(recorded);
    const send = (status: number, body?: unknown) => {
      res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
      res.end(body === undefined ? undefined : JSON.stringify(body));
    };
    const route = this.route(recorded.method, url.pathname);
    if (!route) return send(404, { message: 'Not Found' });
    const failure = this.failures.get(route.endpoint)?.shift();
    if (failure) return send(failure, { message: `fake ${failure} for ${route.endpoint}` });

    if (route.endpoint === 'token') {
      const app = this.options.app;
      const claims = app && verifyJwt(recorded.authorization?.replace(/^Bearer /, '') ?? '', app.publicKey);
      if (!app || !claims || claims.iss !== String(app.appId) || (claims.exp ?? 0) < Date.now() / 1000) {
        return send(401, { message: 'A JSON web token could not be decoded' });
      }
      if (route.id !== String(app.installationId)) return send(404, { message: 'Not Found' });
      return send(201, {
        token: INSTALLATION_TOKEN,
        expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      });
    }
    const accepted = [INSTALLATION_TOKEN, this.options.token]
      .filter(Boolean)
      .map((token) => `Bearer ${token}`);
    if (!accepted.includes(recorded.authorization ?? '')) return send(401, { message: 'Bad credentials' });

    switch (route.endpoint) {
      case 'dispatch': {
        const body = recorded.body as { ref?: unknown; inputs?: Record<string, unknown> } | undefined;
        if (typeof body?.ref !== 'string' || typeof body.inputs?.job_id !== 'string') {
          return send(422, { message: 'Required input ref or job_id not provided' });
        }
        const id = this.nextRunId++;
        this.runs.push({
          id,
          name: 'deploy',
          display_title: `Deploy ${body.inputs.job_id}`,
          status: 'queued',
          conclusion: null,
          html_url: `https://github.example/acme/deploys/actions/runs/${id}`,
          created_at: new Date().toISOString(),
          workflow_id: Number(route.id),
          event: 'workflow_dispatch',
        });
        return send(204);
      }
      case 'runs': {
        const since = url.searchParams.get('created')?.replace(/^>=/, '');
        const runs = this.runs
          .filter((run) => run.workflow_id === Number(route.id))
          .filter((run) => !since || run.created_at >= since)
          .reverse();
        return send(200, { total_count: runs.length, workflow_runs: runs });
      }
      case 'run': {
        const run = this.runs.find((candidate) => String(candidate.id) === route.id);
        return run ? send(200, run) : send(404, { message: 'Not Found' });
      }
      case 'cancel': {
        const run = this.runs.find((candidate) => String(candidate.id) === route.id);
        if (!run) return send(404, { message: 'Not Found' });
        if (run.status === 'completed')
          return send(409, { message: 'Cannot cancel a workflow run that is completed.' });
        Object.assign(run, { status: 'completed', conclusion: 'cancelled' });
        return send(202, {});
      }
    }
  }

  private route(method: string, path: string): { endpoint: Endpoint; id: string } | undefined {
    const patterns: [string, RegExp, Endpoint][] = [
      ['POST', /^\/app\/installations\/(\d+)\/access_tokens$/, 'token'],
      ['POST', /^\/repos\/[^/]+\/[^/]+\/actions\/workflows\/([^/]+)\/dispatches$/, 'dispatch'],
      ['GET', /^\/repos\/[^/]+\/[^/]+\/actions\/workflows\/([^/]+)\/runs$/, 'runs'],
      ['GET', /^\/repos\/[^/]+\/[^/]+\/actions\/runs\/(\d+)$/, 'run'],
      ['POST', /^\/repos\/[^/]+\/[^/]+\/actions\/runs\/(\d+)\/cancel$/, 'cancel'],
    ];
    for (const [verb, pattern, endpoint] of patterns) {
      const match = verb === method ? pattern.exec(path) : null;
      if (match) return { endpoint, id: match[1]! };
    }
    return undefined;
  }
}
