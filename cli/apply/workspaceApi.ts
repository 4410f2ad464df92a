import type { ApiClient } from '../apiClient';

/** A request the API refused, with the problem it answered (RFC 9457). */
class ApiRefusal extends Error {
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    problem: unknown,
  ) {
    super(`${method} ${path} answered ${status}: ${describeProblem(problem)}`);
  }
}

function describeProblem(problem: unknown): string {
  if (typeof problem !== 'object' || problem === null) return String(problem ?? 'no body');
  const { detail, title, errors } = problem as {
    detail?: string;
    title?: string;
    errors?: { path: string; message: string }[];
  };
  const fields = (errors ?? []).map((error) => `${error.path}: ${error.message}`);
  return [detail ?? title ?? JSON.stringify(problem), ...fields].join('; ');
}

/** One workspace's records over HTTP: what `apply` reads and writes. */
export class WorkspaceApi {
  constructor(
    private readonly client: ApiClient,
    readonly workspaceId: string,
  ) {}

  private async send<T>(method: string, path: string, body?: unknown): Promise<T>;
  private async send<T>(
    method: 'GET',
    path: string,
    body: undefined,
    missing: 'allowed',
  ): Promise<T | undefined>;
  private async send<T>(method: string, path: string, body?: unknown, missing?: 'allowed') {
    const full = `v1/workspaces/${this.workspaceId}${path}`;
    const response = await this.client.request<T>(method, full, body);
    if (response.status >= 200 && response.status < 300) return response.body;
    if (response.status === 404 && missing === 'allowed') return undefined;
    throw new ApiRefusal(method, `/${full}`, response.status, response.body);
  }

  get<T>(path: string): Promise<T> {
    return this.send('GET', path);
  }

  /** `undefined` when the record does not exist. */
  find<T>(path: string): Promise<T | undefined> {
    return this.send<T>('GET', path, undefined, 'allowed');
  }

  /** Every item of a list, page by page. */
  async list<T>(path: string): Promise<T[]> {
    const items: T[] = [];
    const separator = path.includes('?') ? '&' : '?';
    for (let offset = 0; ;) {
      const page = await this.get<{ items: T[]; total: number }>(
        `${path}${separator}limit=1000&offset=${offset}`,
      );
      items.push(...page.items);
      offset += page.items.length;
      if (page.items.length === 0 || offset >= page.total) return items;
    }
  }

  put<T>(path: string, body: unknown): Promise<T> {
    return this.send('PUT', path, body);
  }

  post<T>(path: string, body: unknown): Promise<T> {
    return this.send('POST', path, body);
  }

  patch<T>(path: string, body: unknown): Promise<T> {
    return this.send('PATCH', path, body);
  }

  delete(path: string): Promise<unknown> {
    return this.send('DELETE', path);
  }
}
