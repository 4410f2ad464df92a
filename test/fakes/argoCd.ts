import { FakeServer, type RecordedRequest, type Reply } from './server';

/**
 * A fake Argo CD API server: create-or-update of Applications (`upsert=true`), sync, get, and
 * terminating the running operation, with Argo CD's shapes. It checks the bearer token and that an
 * Application has a name and a spec, and refuses a sync while an operation runs, as Argo CD does
 * (400, gRPC code 9). Tests settle a sync with `settle`.
 */

type Endpoint = 'upsert' | 'sync' | 'get' | 'terminate';

export interface FakeApplication {
  metadata: { name: string; [key: string]: unknown };
  spec: Record<string, unknown>;
  status: {
    sync: { status: string };
    health: { status: string; message?: string };
    operationState?: { phase: string; message?: string; startedAt: string; finishedAt?: string };
  };
}

export class FakeArgoCd extends FakeServer<Endpoint> {
  readonly applications = new Map<string, FakeApplication>();

  constructor(private readonly apiKey: string) {
    super();
  }

  /** Ends the application's sync: its operation phase, sync and health as Argo CD would report them. */
  settle(name: string, phase: string, sync: string, health: string, message?: string): void {
    const app = this.applications.get(name)!;
    app.status = {
      sync: { status: sync },
      health: { status: health, ...(message ? { message } : {}) },
      operationState: { ...app.status.operationState!, phase, message, finishedAt: new Date().toISOString() },
    };
  }

  protected errorBody(status: number, message: string): unknown {
    return { error: message, code: status === 404 ? 5 : status === 401 ? 16 : 2, message };
  }

  protected route(method: string, path: string) {
    return this.match(method, path, [
      ['POST', /^\/api\/v1\/applications()$/, 'upsert'],
      ['POST', /^\/api\/v1\/applications\/([^/]+)\/sync$/, 'sync'],
      ['GET', /^\/api\/v1\/applications\/([^/]+)$/, 'get'],
      ['DELETE', /^\/api\/v1\/applications\/([^/]+)\/operation$/, 'terminate'],
    ]);
  }

  protected answer(endpoint: Endpoint, id: string, request: RecordedRequest, url: URL): Reply {
    const fail = (status: number, message: string): Reply => ({
      status,
      body: this.errorBody(status, message),
    });
    if (request.authorization !== `Bearer ${this.apiKey}`)
      return fail(401, 'invalid session: token is invalid');
    const app = this.applications.get(decodeURIComponent(id));
    switch (endpoint) {
      case 'upsert': {
        const body = request.body as Partial<FakeApplication> | undefined;
        const name = body?.metadata?.name;
        if (typeof name !== 'string' || !body?.spec)
          return fail(400, 'application spec is invalid: name and spec required');
        const existing = this.applications.get(name);
        if (existing && url.searchParams.get('upsert') !== 'true')
          return fail(400, 'existing application spec is different');
        const stored: FakeApplication = {
          metadata: body.metadata!,
          spec: body.spec,
          status: existing?.status ?? { sync: { status: 'OutOfSync' }, health: { status: 'Missing' } },
        };
        this.applications.set(name, stored);
        return { status: 200, body: stored };
      }
      case 'sync':
        if (!app) return fail(404, `applications.argoproj.io "${id}" not found`);
        if (app.status.operationState?.phase === 'Running') {
          const busy = 'another operation is already in progress';
          return { status: 400, body: { error: busy, code: 9, message: busy } };
        }
        app.status = {
          sync: { status: 'OutOfSync' },
          health: { status: 'Progressing' },
          operationState: { phase: 'Running', startedAt: new Date().toISOString() },
        };
        return { status: 200, body: app };
      case 'get':
        return app ? { status: 200, body: app } : fail(404, `applications.argoproj.io "${id}" not found`);
      case 'terminate':
        if (!app || app.status.operationState?.phase !== 'Running')
          return fail(400, 'Unable to terminate operation. No operation is in progress');
        app.status.operationState = {
          ...app.status.operationState,
          phase: 'Failed',
          message: 'Operation terminated',
        };
        return { status: 200, body: {} };
    }
  }
}
