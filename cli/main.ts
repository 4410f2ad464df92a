#!/usr/bin/env node
import { Command } from 'commander';
import { createApiKeyCommand, createWorkspaceCommand, migrateCommand } from './commands/admin';
import { runAgentCommand, type AgentRunOptions } from './commands/agent';
import { apiCommand, workerCommand } from './commands/serve';
import { startCommand } from './commands/start';
import { ConfigError, loadConfig, type Config } from './config';
import { ensureTemporalCli, temporalCliVersion } from './temporalCli';
import { flightdeckVersion } from './version';

/** The `flightdeck` command. */

function withConfig<A extends unknown[]>(action: (config: Config, ...args: A) => Promise<void>) {
  return async (...args: A) => {
    try {
      await action(loadConfig(), ...args);
    } catch (error) {
      const message = error instanceof ConfigError || error instanceof Error ? error.message : String(error);
      process.stderr.write(`flightdeck: ${message}\n`);
      process.exitCode = 1;
    }
  };
}

const program = new Command()
  .name('flightdeck')
  .description('Deployment orchestration on Temporal')
  .version(flightdeckVersion());

program
  .command('start')
  .description(
    'Run the whole service: embedded PostgreSQL and Temporal unless configured, migrations, worker and API',
  )
  .action(withConfig(startCommand));

program
  .command('api')
  .description('Run the HTTP API only (needs DATABASE_URL and TEMPORAL_ADDRESS)')
  .action(withConfig(apiCommand));

program
  .command('worker')
  .description('Run a Temporal worker and outbox relay only (needs DATABASE_URL and TEMPORAL_ADDRESS)')
  .action(withConfig(workerCommand));

program.command('migrate').description('Apply database migrations').action(withConfig(migrateCommand));

program
  .command('workspace')
  .description('Manage workspaces')
  .command('create')
  .description('Create a workspace')
  .requiredOption('--name <name>', 'display name')
  .option('--slug <slug>', 'URL-friendly id, unique (default: derived from the name)')
  .action(
    withConfig((config, options: { name: string; slug?: string }) => createWorkspaceCommand(config, options)),
  );

program
  .command('apikey')
  .description('Manage API keys')
  .command('create')
  .description('Issue an API key for a workspace; it is printed once')
  .requiredOption('--workspace <id>', 'workspace id')
  .option('--name <name>', 'a label for the key', 'cli')
  .option(
    '--agent <jobAgentId>',
    'limit the key to one pull agent: poll, claim, heartbeat and report its jobs',
  )
  .action(
    withConfig((config, options: { workspace: string; name: string; agent?: string }) =>
      createApiKeyCommand(config, options),
    ),
  );

program
  .command('agent')
  .description('The reference pull agent')
  .command('run')
  .description("Poll for the agent's jobs, claim them and run a shell command for each, until SIGTERM")
  .requiredOption('--agent <jobAgentId>', 'the http-pull job agent to work for')
  .option('--exec <command>', "the shell command to run per job (default: the job configuration's `script`)")
  .option('--api <url>', 'the Flightdeck API URL', process.env.FLIGHTDECK_API_URL)
  .option('--key <apiKey>', 'an API key, ideally scoped to the agent', process.env.FLIGHTDECK_API_KEY)
  .option('--workspace <id>', 'the workspace id', process.env.FLIGHTDECK_WORKSPACE_ID)
  .option('--ca <file>', 'a CA certificate to trust (a self-signed server)')
  .option('--work-dir <dir>', 'where each job gets its directory', '.flightdeck-agent')
  .option('--max-idle <seconds>', 'longest pause between polls while the queue is empty', '30')
  .option(
    '--grace <seconds>',
    'how long a running job may finish after SIGTERM before it is given back',
    '30',
  )
  .action(async (options: AgentRunOptions) => {
    try {
      await runAgentCommand(options);
    } catch (error) {
      process.stderr.write(`flightdeck agent: ${(error as Error).message}\n`);
      process.exitCode = 1;
    }
  });

const temporal = program
  .command('temporal')
  .description('The Temporal CLI that holds the embedded dev server');
temporal
  .command('ensure')
  .description(
    'Find the Temporal CLI, building it from Go modules into the user cache if needed; print its path',
  )
  .action(async () => {
    try {
      const found = await ensureTemporalCli();
      process.stdout.write(`${found.path}\n`);
      process.stderr.write(`(${found.source}) ${temporalCliVersion(found.path)}\n`);
    } catch (error) {
      process.stderr.write(`flightdeck: ${(error as Error).message}\n`);
      process.exitCode = 1;
    }
  });

void program.parseAsync(process.argv);
