import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';

export interface ApiClientOptions {
  apiUrl: string;
  apiKey: string;
  /** A CA certificate file to trust (a self-signed server). */
  caFile?: string;
}

export interface ApiResponse<T> {
  status: number;
  body: T;
}

/** A minimal JSON client for the Flightdeck API (pull agents, `apply`), with keep-alive. */
export class ApiClient {
  private readonly base: URL;
  private readonly agent: http.Agent;

  constructor(private readonly options: ApiClientOptions) {
    this.base = new URL(options.apiUrl.endsWith('/') ? options.apiUrl : `${options.apiUrl}/`);
    this.agent =
      this.base.protocol === 'https:'
        ? new https.Agent({
            keepAlive: true,
            ca: options.caFile ? fs.readFileSync(options.caFile) : undefined,
          })
        : new http.Agent({ keepAlive: true });
  }

  request<T>(method: string, path: string, body?: unknown): Promise<ApiResponse<T>> {
    const url = new URL(path.replace(/^\//, ''), this.base);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const transport = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = transport.request(
        url,
        {
          method,
          agent: this.agent,
          timeout: 30_000,
          headers: {
            'x-api-key': this.options.apiKey,
            accept: 'application/json',
            ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = text ? JSON.parse(text) : undefined;
            } catch {
              /* not JSON: keep the text */
            }
            resolve({ status: res.statusCode ?? 0, body: parsed as T });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${url.pathname} timed out`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
