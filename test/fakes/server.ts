import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  authorization?: string;
  body?: unknown;
}

export type Reply = { status: number; body?: unknown };

/**
 * What every fake remote service shares: a real HTTP server on a free port that records each
 * request (method, path, credentials, JSON body) and can be told to answer the next calls of an
 * endpoint with error statuses before it works again.
 */
export abstract class FakeServer<Endpoint extends string> {
  readonly requests: RecordedRequest[] = [];
  private readonly failures = new Map<Endpoint, number[]>();
  private readonly lostAnswers = new Map<Endpoint, number>();
  private readonly server = http.createServer((req, res) => void this.receive(req, res));
  url = '';

  /** The endpoint a request is for and its path id, or undefined for 404. */
  protected abstract route(method: string, path: string): { endpoint: Endpoint; id: string } | undefined;
  protected abstract answer(endpoint: Endpoint, id: string, request: RecordedRequest, url: URL): Reply;
  /** The body of an error answer, in the service's shape. */
  protected abstract errorBody(status: number, message: string): unknown;

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

  failNext(endpoint: Endpoint, ...statuses: number[]): void {
    this.failures.set(endpoint, [...(this.failures.get(endpoint) ?? []), ...statuses]);
  }

  /**
   * The next `count` calls of an endpoint do their work but answer 500, as when the caller dies
   * (or its connection drops) after the remote acted and before it recorded the answer.
   */
  loseNextAnswers(endpoint: Endpoint, count = 1): void {
    this.lostAnswers.set(endpoint, (this.lostAnswers.get(endpoint) ?? 0) + count);
  }

  requestsTo(fragment: string): RecordedRequest[] {
    return this.requests.filter((request) => request.path.includes(fragment));
  }

  private async receive(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const url = new URL(req.url ?? '/', 'http://fake');
    const request: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname + url.search,
      authorization: req.headers.authorization,
      body: text ? JSON.parse(text) : undefined,
    };
    this.requests.push(request);
    const route = this.route(request.method, url.pathname);
    const failure = route && this.failures.get(route.endpoint)?.shift();
    let reply: Reply = !route
      ? { status: 404, body: this.errorBody(404, 'Not Found') }
      : failure
        ? { status: failure, body: this.errorBody(failure, `fake ${failure} for ${route.endpoint}`) }
        : this.answer(route.endpoint, route.id, request, url);
    const lost = route && !failure ? (this.lostAnswers.get(route.endpoint) ?? 0) : 0;
    if (route && lost > 0) {
      this.lostAnswers.set(route.endpoint, lost - 1);
      reply = { status: 500, body: this.errorBody(500, `fake lost answer for ${route.endpoint}`) };
    }
    res.writeHead(reply.status, reply.body === undefined ? {} : { 'content-type': 'application/json' });
    res.end(reply.body === undefined ? undefined : JSON.stringify(reply.body));
  }

  protected match(
    method: string,
    path: string,
    patterns: [string, RegExp, Endpoint][],
  ): { endpoint: Endpoint; id: string } | undefined {
    for (const [verb, pattern, endpoint] of patterns) {
      const found = verb === method ? pattern.exec(path) : null;
      if (found) return { endpoint, id: found[1] ?? '' };
    }
    return undefined;
  }
}
