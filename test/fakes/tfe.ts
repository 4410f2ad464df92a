import { FakeServer, type RecordedRequest, type Reply } from './server';

/**
 * A fake Terraform Cloud API (JSON:API): workspaces by name (show, create, update), workspace
 * variables (list, create, update), runs (create, show, cancel). It checks the bearer token, the
 * `application/vnd.api+json` documents' `type`s, and keeps what it was sent. Tests move runs on.
 */

type Endpoint =
  | 'showWorkspace'
  | 'createWorkspace'
  | 'updateWorkspace'
  | 'listVars'
  | 'createVar'
  | 'updateVar'
  | 'createRun'
  | 'listRuns'
  | 'showRun'
  | 'cancelRun';

export interface FakeVariable {
  id: string;
  key: string;
  value: string | null;
  sensitive: boolean;
  category: string;
  hcl: boolean;
}

export interface FakeTfeRun {
  id: string;
  workspaceId: string;
  status: string;
  message: string;
}

export class FakeTfe extends FakeServer<Endpoint> {
  readonly workspaces = new Map<string, { id: string; attributes: Record<string, unknown> }>();
  readonly variables = new Map<string, FakeVariable[]>();
  readonly runs: FakeTfeRun[] = [];
  /** Every value ever written to a variable, sensitive ones included: what the fake was sent. */
  readonly writtenValues: string[] = [];
  private next = 1;

  constructor(private readonly token: string) {
    super();
  }

  setRunStatus(runId: string, status: string): void {
    this.runs.find((run) => run.id === runId)!.status = status;
  }

  protected errorBody(status: number, message: string): unknown {
    return { errors: [{ status: String(status), title: message }] };
  }

  protected route(method: string, path: string) {
    return this.match(method, path, [
      ['GET', /^\/api\/v2\/organizations\/[^/]+\/workspaces\/([^/]+)$/, 'showWorkspace'],
      ['POST', /^\/api\/v2\/organizations\/([^/]+)\/workspaces$/, 'createWorkspace'],
      ['PATCH', /^\/api\/v2\/workspaces\/([^/]+)$/, 'updateWorkspace'],
      ['GET', /^\/api\/v2\/workspaces\/([^/]+)\/vars$/, 'listVars'],
      ['POST', /^\/api\/v2\/workspaces\/([^/]+)\/vars$/, 'createVar'],
      ['PATCH', /^\/api\/v2\/workspaces\/[^/]+\/vars\/([^/]+)$/, 'updateVar'],
      ['POST', /^\/api\/v2\/runs()$/, 'createRun'],
      ['GET', /^\/api\/v2\/workspaces\/([^/]+)\/runs$/, 'listRuns'],
      ['GET', /^\/api\/v2\/runs\/([^/]+)$/, 'showRun'],
      ['POST', /^\/api\/v2\/runs\/([^/]+)\/actions\/cancel$/, 'cancelRun'],
    ]);
  }

  protected answer(endpoint: Endpoint, id: string, request: RecordedRequest): Reply {
    const fail = (status: number, message: string): Reply => ({
      status,
      body: this.errorBody(status, message),
    });
    if (request.authorization !== `Bearer ${this.token}`) return fail(401, 'unauthorized');
    const data = (
      request.body as
        | { data?: { type?: string; attributes?: Record<string, unknown>; relationships?: unknown } }
        | undefined
    )?.data;
    const workspace = [...this.workspaces.values()].find((candidate) => candidate.id === id);
    switch (endpoint) {
      case 'showWorkspace': {
        const found = this.workspaces.get(decodeURIComponent(id));
        return found
          ? { status: 200, body: { data: { type: 'workspaces', ...found } } }
          : fail(404, 'not found');
      }
      case 'createWorkspace': {
        if (data?.type !== 'workspaces' || typeof data.attributes?.name !== 'string')
          return fail(422, "invalid attribute: Name can't be blank");
        const created = { id: `ws-${this.next++}`, attributes: data.attributes };
        this.workspaces.set(data.attributes.name, created);
        this.variables.set(created.id, []);
        return { status: 201, body: { data: { type: 'workspaces', ...created } } };
      }
      case 'updateWorkspace':
        if (!workspace || data?.type !== 'workspaces') return fail(404, 'not found');
        workspace.attributes = { ...workspace.attributes, ...data.attributes };
        return { status: 200, body: { data: { type: 'workspaces', ...workspace } } };
      case 'listVars':
        return {
          status: 200,
          body: {
            data: (this.variables.get(id) ?? []).map(({ id: varId, ...attributes }) => ({
              id: varId,
              type: 'vars',
              attributes: { ...attributes, value: attributes.sensitive ? null : attributes.value },
            })),
          },
        };
      case 'createVar':
      case 'updateVar': {
        const attributes = data?.attributes as Omit<FakeVariable, 'id'> | undefined;
        if (data?.type !== 'vars' || !attributes?.key || typeof attributes.value !== 'string')
          return fail(422, 'invalid variable');
        this.writtenValues.push(attributes.value);
        if (endpoint === 'createVar') {
          const list = this.variables.get(id);
          if (!list) return fail(404, 'not found');
          list.push({ id: `var-${this.next++}`, ...attributes });
          return { status: 201, body: { data: { type: 'vars', id: list.at(-1)!.id, attributes } } };
        }
        const existing = [...this.variables.values()].flat().find((variable) => variable.id === id);
        if (!existing) return fail(404, 'not found');
        Object.assign(existing, attributes);
        return { status: 200, body: { data: { type: 'vars', id, attributes } } };
      }
      case 'createRun': {
        const workspaceId = (data?.relationships as { workspace?: { data?: { id?: string } } } | undefined)
          ?.workspace?.data?.id;
        if (data?.type !== 'runs' || !workspaceId || !this.variables.has(workspaceId))
          return fail(404, 'workspace not found');
        const run: FakeTfeRun = {
          id: `run-${this.next++}`,
          workspaceId,
          status: 'pending',
          message: String(data.attributes?.message ?? ''),
        };
        this.runs.push(run);
        return {
          status: 201,
          body: {
            data: { type: 'runs', id: run.id, attributes: { status: run.status, message: run.message } },
          },
        };
      }
      case 'listRuns': {
        if (!this.variables.has(id)) return fail(404, 'workspace not found');
        const runs = this.runs.filter((run) => run.workspaceId === id).reverse();
        return {
          status: 200,
          body: {
            data: runs.map((run) => ({
              type: 'runs',
              id: run.id,
              attributes: { status: run.status, message: run.message },
            })),
          },
        };
      }
      case 'showRun': {
        const run = this.runs.find((candidate) => candidate.id === id);
        return run
          ? {
              status: 200,
              body: {
                data: { type: 'runs', id: run.id, attributes: { status: run.status, message: run.message } },
              },
            }
          : fail(404, 'not found');
      }
      case 'cancelRun': {
        const run = this.runs.find((candidate) => candidate.id === id);
        if (!run) return fail(404, 'not found');
        if (['applied', 'errored', 'discarded', 'canceled'].includes(run.status))
          return fail(409, 'transition not allowed');
        run.status = 'canceled';
        return { status: 202 };
      }
    }
  }
}
