import path from 'node:path';
import { plainVariableProblem, PullAgent } from '../agent/pullAgent';
import { printable } from '../terminalText';

export interface AgentRunOptions {
  agent: string;
  exec?: string;
  env?: string;
  api?: string;
  key?: string;
  workspace?: string;
  ca?: string;
  workDir: string;
  maxIdle: string;
  grace: string;
}

/** `flightdeck agent run`: the reference pull agent, until SIGTERM or Ctrl-C. */
export async function runAgentCommand(options: AgentRunOptions): Promise<void> {
  const missing = [
    options.api ? undefined : '--api (or FLIGHTDECK_API_URL)',
    options.key ? undefined : '--key (or FLIGHTDECK_API_KEY)',
    options.workspace ? undefined : '--workspace (or FLIGHTDECK_WORKSPACE_ID)',
  ].filter(Boolean);
  if (missing.length > 0) throw new Error(`missing ${missing.join(', ')}`);
  const maxIdleSeconds = Number(options.maxIdle);
  const graceSeconds = Number(options.grace);
  if (!(maxIdleSeconds >= 1))
    throw new Error(`--max-idle must be a number of seconds ≥ 1, not ${options.maxIdle}`);
  if (!(graceSeconds >= 0)) throw new Error(`--grace must be a number of seconds ≥ 0, not ${options.grace}`);
  const plainVariables = (options.env ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  const problem = plainVariables.map(plainVariableProblem).find(Boolean);
  if (problem) throw new Error(`--env: ${problem}`);
  const agent = new PullAgent({
    apiUrl: options.api!,
    apiKey: options.key!,
    caFile: options.ca,
    workspaceId: options.workspace!,
    jobAgentId: options.agent,
    exec: options.exec,
    plainVariables,
    workDir: path.resolve(options.workDir),
    maxIdleSeconds,
    graceSeconds,
    // Lines quote job fields, server answers and the command's output: their control characters are escaped.
    log: (line) => process.stdout.write(`${new Date().toISOString()} ${printable(line)}\n`),
  });
  const stop = () => void agent.stop();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  await agent.run();
}
