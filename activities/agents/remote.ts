import { describeEgressFailure, EgressRefusedError, type Egress } from '../egress';

/**
 * Calls to a push agent's service (GitHub, Argo CD, Terraform Cloud), classified as the job needs
 * them: the remote's 4xx answers other than 408 and 429 are refusals that no retry will change (the
 * job ends `invalid_integration` with the remote's message); 5xx, 408, 429 and network errors are
 * thrown as plain errors, so the activity retries them with backoff.
 */
export class RemoteRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const REQUEST_TIMEOUT_MS = 30_000;
const MESSAGE_LIMIT = 500;
const ANSWER_LIMIT = 8 * 1024 * 1024;

export interface RemoteRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
}

/** A JSON request to `url`; answers the parsed body (undefined when empty). */
export async function remoteJson<T>(
  egress: Egress,
  service: string,
  url: string,
  request: RemoteRequest = {},
): Promise<T> {
  const method = request.method ?? 'GET';
  const what = `${service} ${method} ${new URL(url).pathname}`;
  const response = await egress
    .request(url, {
      method,
      headers: {
        accept: 'application/json',
        ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...request.headers,
      },
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
      timeoutMs: REQUEST_TIMEOUT_MS,
      maxBytes: ANSWER_LIMIT,
    })
    .catch((error: unknown) => {
      // The policy's refusal is final: the agent's address will not change by retrying.
      if (error instanceof EgressRefusedError)
        throw new RemoteRefusal(0, `${what} refused: ${error.message}`);
      throw new Error(`${what} failed: ${describeEgressFailure(error)}`);
    });
  const text = response.text;
  if (response.ok) return (text ? JSON.parse(text) : undefined) as T;
  const detail = remoteMessage(text);
  if (response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429) {
    throw new RemoteRefusal(
      response.status,
      `${what} answered ${response.status}${detail ? `: ${detail}` : ''}`,
    );
  }
  throw new Error(`${what} answered ${response.status}${detail ? `: ${detail}` : ''}; retrying`);
}

/** The remote's own words: a JSON `message` or `error` field, else the start of the text. */
function remoteMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { message?: unknown; error?: unknown };
    const message = parsed.message ?? parsed.error;
    if (typeof message === 'string') return message.slice(0, MESSAGE_LIMIT);
  } catch {
    /* not JSON */
  }
  return text.trim().slice(0, MESSAGE_LIMIT);
}
