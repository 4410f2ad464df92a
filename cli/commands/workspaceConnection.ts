import type { Command } from 'commander';
import { ApiClient } from '../apiClient';
import { printable } from '../terminalText';

/** How a CLI command reaches one workspace of a Flightdeck API (`apply`, `explain`). */
export interface WorkspaceConnectionOptions {
  api?: string;
  key?: string;
  workspace?: string;
  ca?: string;
}

/** The options every workspace command takes, with their environment defaults. */
export function withWorkspaceConnection(command: Command): Command {
  return command
    .option('--api <url>', 'the Flightdeck API URL', process.env.FLIGHTDECK_API_URL)
    .option('--key <apiKey>', 'an API key of the workspace', process.env.FLIGHTDECK_API_KEY)
    .option(
      '--workspace <id>',
      "the workspace id (default: the key's workspace)",
      process.env.FLIGHTDECK_WORKSPACE_ID,
    )
    .option('--ca <file>', 'a CA certificate to trust (a self-signed server)');
}

/** What the options lack to connect, as a message; undefined when nothing does. */
export function missingConnection(options: WorkspaceConnectionOptions): string | undefined {
  const missing = [
    options.api ? undefined : '--api (or FLIGHTDECK_API_URL)',
    options.key ? undefined : '--key (or FLIGHTDECK_API_KEY)',
  ].filter(Boolean);
  return missing.length > 0 ? `missing ${missing.join(', ')}` : undefined;
}

export function connect(options: WorkspaceConnectionOptions): ApiClient {
  return new ApiClient({ apiUrl: options.api!, apiKey: options.key!, caFile: options.ca });
}

/** The workspace to act on: --workspace, else the key's own (a workspace key sees exactly one). */
export async function workspaceOf(client: ApiClient, options: WorkspaceConnectionOptions): Promise<string> {
  if (options.workspace) return options.workspace;
  const response = await client.request<{ workspaces?: { id: string }[] }>('GET', 'v1/workspaces');
  const workspaces = response.body?.workspaces ?? [];
  if (response.status !== 200 || workspaces.length !== 1) {
    throw new Error(
      `cannot tell the workspace from the key (GET /v1/workspaces answered ${response.status}); give --workspace`,
    );
  }
  return workspaces[0]!.id;
}

export type Write = (line: string) => void;

/**
 * Runs a workspace command's `body` with a client connected to the options' workspace: 1 with a
 * message when the connection is not given or the call fails, otherwise what `body` returns.
 */
export async function runWorkspaceCommand(
  name: string,
  options: WorkspaceConnectionOptions,
  err: Write,
  body: (client: ApiClient, workspaceId: string) => Promise<number>,
): Promise<number> {
  const missing = missingConnection(options);
  if (missing) {
    err(`flightdeck ${name}: ${missing}`);
    return 1;
  }
  const client = connect(options);
  try {
    return await body(client, await workspaceOf(client, options));
  } catch (error) {
    err(printable(`flightdeck ${name}: ${(error as Error).message}`));
    return 1;
  } finally {
    client.close();
  }
}

export const stdout: Write = (line) => process.stdout.write(`${line}\n`);
export const stderr: Write = (line) => process.stderr.write(`${line}\n`);

/**
 * A command's answer: its lines on `out` and 0, or the problem's detail on `err` and 1. Both carry
 * text the server holds, so each line is printed with its control characters escaped.
 */
export function answer<T extends { detail?: string }>(
  name: string,
  response: { status: number; body: T },
  out: Write,
  err: Write,
  lines: (body: T) => string[],
): number {
  if (response.status >= 300) {
    err(printable(`flightdeck ${name}: ${response.status} ${response.body?.detail ?? ''}`.trim()));
    return 1;
  }
  for (const line of lines(response.body)) out(printable(line));
  return 0;
}
