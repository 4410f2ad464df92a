import { createVerify } from 'node:crypto';
import { FakeServer, type RecordedRequest, type Reply } from './server';

/**
 * A fake of the GitHub REST endpoints the workflow runner uses, with GitHub's documented shapes:
 * installation tokens (the app JWT is verified with the app's public key), workflow dispatch,
 * workflow runs (list, get, cancel). It checks the credentials and the JSON body.
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

export class FakeGithub extends FakeServer<Endpoint> {
  readonly runs: FakeRun[] = [];
  private nextRunId = 9_000_001;

  constructor(private readonly options: FakeGithubOptions) {
    super();
  }

  setRun(id: number, state: Pick<FakeRun, 'status' | 'conclusion'>): void {
    Object.assign(
      this.runs.find((run) => run.id === id)!,
      state,
    );
  }

  protected errorBody(_status: number, message: string): unknown {
    return { message, documentation_url: 'https://docs.github.com/rest' };
  }

  protected route(method: string, path: string) {
    return this.match(method, path, [
      ['POST', /^\/app\/installations\/(\d+)\/access_tokens$/, 'token'],
      ['POST', /^\/repos\/[^/]+\/[^/]+\/actions\/workflows\/([^/]+)\/dispatches$/, 'dispatch'],
      ['GET', /^\/repos\/[^/]+\/[^/]+\/actions\/workflows\/([^/]+)\/runs$/, 'runs'],
      ['GET', /^\/repos\/[^/]+\/[^/]+\/actions\/runs\/(\d+)$/, 'run'],
      ['POST', /^\/repos\/[^/]+\/[^/]+\/actions\/runs\/(\d+)\/cancel$/, 'cancel'],
    ]);
  }

  protected answer(endpoint: Endpoint, id: string, request: RecordedRequest, url: URL): Reply {
    const fail = (status: number, message: string): Reply => ({
      status,
      body: this.errorBody(status, message),
    });
    if (endpoint === 'token') {
      const app = this.options.app;
      const claims = app && verifyJwt(request.authorization?.replace(/^Bearer /, '') ?? '', app.publicKey);
      if (!app || !claims || claims.iss !== String(app.appId) || (claims.exp ?? 0) < Date.now() / 1000) {
        return fail(401, 'A JSON web token could not be decoded');
      }
      if (id !== String(app.installationId)) return fail(404, 'Not Found');
      return {
        status: 201,
        body: { token: INSTALLATION_TOKEN, expires_at: new Date(Date.now() + 3_600_000).toISOString() },
      };
    }
    const accepted = [INSTALLATION_TOKEN, this.options.token]
      .filter(Boolean)
      .map((token) => `Bearer ${token}`);
    if (!accepted.includes(request.authorization ?? '')) return fail(401, 'Bad credentials');

    const run = this.runs.find((candidate) => String(candidate.id) === id);
    switch (endpoint) {
      case 'dispatch': {
        const body = request.body as { ref?: unknown; inputs?: Record<string, unknown> } | undefined;
        if (typeof body?.ref !== 'string' || typeof body.inputs?.job_id !== 'string') {
          return fail(422, 'Required input ref or job_id not provided');
        }
        const runId = this.nextRunId++;
        this.runs.push({
          id: runId,
          name: 'deploy',
          display_title: `Deploy ${body.inputs.job_id}`,
          status: 'queued',
          conclusion: null,
          html_url: `https://github.example/acme/deploys/actions/runs/${runId}`,
          created_at: new Date().toISOString(),
          workflow_id: Number(id),
          event: 'workflow_dispatch',
        });
        return { status: 204 };
      }
      case 'runs': {
        const since = url.searchParams.get('created')?.replace(/^>=/, '');
        const runs = this.runs
          .filter((candidate) => candidate.workflow_id === Number(id))
          .filter((candidate) => !since || candidate.created_at >= since)
          .reverse();
        return { status: 200, body: { total_count: runs.length, workflow_runs: runs } };
      }
      case 'run':
        return run ? { status: 200, body: run } : fail(404, 'Not Found');
      case 'cancel':
        if (!run) return fail(404, 'Not Found');
        if (run.status === 'completed') return fail(409, 'Cannot cancel a workflow run that is completed.');
        Object.assign(run, { status: 'completed', conclusion: 'cancelled' });
        return { status: 202, body: {} };
    }
  }
}
