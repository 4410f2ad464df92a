#!/usr/bin/env node
import { Command } from 'commander';
import {
  createApiKeyCommand,
  createWorkspaceCommand,
  listApiKeysCommand,
  migrateCommand,
  resealCommand,
  revokeApiKeyCommand,
} from './commands/admin';
import { runAgentCommand, type AgentRunOptions } from './commands/agent';
import { applyCommand, type ApplyCommandOptions } from './commands/apply';
import { apiCommand, workerCommand } from './commands/serve';
import { startCommand } from './commands/start';
import {
  integerIn,
  temporalServerCommand,
  type TemporalServerCommandOptions,
} from './commands/temporalServer';
import { ConfigError, loadConfig, type Config } from './config';
import { explainCommand, type ExplainCommandOptions } from './commands/explain';
import { withWorkspaceConnection } from './commands/workspaceConnection';
import { ensureOpa } from './opa';
import { ensureTemporalCli, temporalCliVersion } from './temporalCli';
import { ensureTemporalServer } from './temporalFull';
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

const admin = program.command('admin').description('Operator commands on the database');
admin
  .command('reseal')
  .description(
    'Bind secrets stored before this version (fd1:) to their workspace and record (fd2:); safe to rerun',
  )
  .action(withConfig((config) => resealCommand(config)));
const apiKeys = admin.command('api-keys').description("A workspace's API keys");
apiKeys
  .command('list')
  .description("List a workspace's API keys (prefix, job agent, created, last used, revoked); never the keys")
  .requiredOption('--workspace <id>', 'workspace id')
  .action(withConfig((config, options: { workspace: string }) => listApiKeysCommand(config, options)));
apiKeys
  .command('revoke')
  .description('Revoke an API key: it stops authenticating at once')
  .requiredOption('--workspace <id>', 'workspace id')
  .argument('<keyId>', 'the key id (from `admin api-keys list`)')
  .action(
    withConfig((config, keyId: string, options: { workspace: string }) =>
      revokeApiKeyCommand(config, options, keyId),
    ),
  );

program
  .command('agent')
  .description('The reference pull agent')
  .command('run')
  .description("Poll for the agent's jobs, claim them and run a shell command for each, until SIGTERM")
  .requiredOption('--agent <jobAgentId>', 'the http-pull job agent to work for')
  .option('--exec <command>', "the shell command to run per job (default: the job configuration's `script`)")
  .option(
    '--env <names>',
    'comma-separated variable names the command also gets under their own names (every variable is in FLIGHTDECK_VAR_<name>)',
  )
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

withWorkspaceConnection(
  program
    .command('apply')
    .description(
      'Create or update systems, environments, deployments, variables, resources, job agents, policies and versions from YAML',
    )
    .requiredOption(
      '-f, --file <path...>',
      'YAML files (several documents each, separated by ---) or directories',
    )
    .option('--dry-run', 'print what would change and change nothing')
    .option(
      '--rewrite-secrets',
      'write secrets even where one is stored (they cannot be read back to compare)',
    ),
).action(async (options: ApplyCommandOptions) => {
  process.exitCode = await applyCommand(options);
});

withWorkspaceConnection(
  program
    .command('explain')
    .description('Why a release target is (not) on a version: each rule, the slot, what happens next')
    .requiredOption('--target <key>', 'the release target: <resourceId>-<environmentId>-<deploymentId>')
    .option('--version <id>', 'a version of the deployment (default: its newest ready one)')
    .option('--json', 'print the API answer instead of the table'),
).action(async (options: ExplainCommandOptions) => {
  process.exitCode = await explainCommand(options);
});

program
  .command('opa')
  .description('Open Policy Agent, for plan validation policy rules')
  .command('ensure')
  .description('Find `opa`, building it from Go modules into the user cache if needed; print its path')
  .action(async () => {
    try {
      process.stdout.write(`${await ensureOpa()}\n`);
    } catch (error) {
      process.stderr.write(`flightdeck: ${(error as Error).message}\n`);
      process.exitCode = 1;
    }
  });

const temporal = program
  .command('temporal')
  .description('Temporal: the CLI that holds the embedded dev server, and a full server on PostgreSQL');
temporal
  .command('ensure')
  .description(
    'Find the Temporal CLI, building it from Go modules into the user cache if needed; print its path',
  )
  .option('--server', 'the full Temporal server and its schema tool instead (`temporal server`)')
  .action(async (options: { server?: boolean }) => {
    try {
      if (options.server) {
        const found = await ensureTemporalServer();
        process.stdout.write(`${found.serverPath}\n`);
        process.stderr.write(`(${found.source}) Temporal server ${found.version}\n`);
        return;
      }
      const found = await ensureTemporalCli();
      process.stdout.write(`${found.path}\n`);
      process.stderr.write(`(${found.source}) ${temporalCliVersion(found.path)}\n`);
    } catch (error) {
      process.stderr.write(`flightdeck: ${(error as Error).message}\n`);
      process.exitCode = 1;
    }
  });
temporal
  .command('server')
  .description(
    'Run a full Temporal server on PostgreSQL in the foreground (built from Go modules on first use)',
  )
  .option(
    '--database-url <url>',
    'postgres://user:password@host:port/DB: Temporal uses DB and DB_visibility, created when missing ' +
      '(default: TEMPORAL_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/temporal)',
  )
  .option('--port <port>', 'frontend gRPC port', integerIn(1, 65535), 7233)
  .option('--ip <address>', 'address to listen on (0.0.0.0: every interface)', '127.0.0.1')
  .option(
    '--data-dir <dir>',
    'generated configuration and log (default: FLIGHTDECK_DATA_DIR/temporal-server)',
  )
  .option('--shards <n>', 'history shards, fixed when the databases are created', integerIn(1, 16384), 4)
  .action(
    withConfig((config, options: TemporalServerCommandOptions) => temporalServerCommand(config, options)),
  );

void program.parseAsync(process.argv);
