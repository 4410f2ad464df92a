#!/usr/bin/env node
import { Command, InvalidArgumentError } from 'commander';
import type { AgentRunOptions } from './commands/agent';
import type { ApplyCommandOptions } from './commands/apply';
import type { ExplainCommandOptions } from './commands/explain';
import type { SkipCreateOptions, SkipListOptions } from './commands/skip';
import type { HoldCreateOptions, HoldListOptions } from './commands/hold';
import type { DecisionOptions } from './commands/approve';
import type { TemporalServerCommandOptions } from './commands/temporalServer';
import { withWorkspaceConnection, type WorkspaceConnectionOptions } from './commands/workspaceConnection';
import { ConfigError, loadConfig, type Config } from './config';
import { printable } from './terminalText';
import { flightdeckVersion } from './version';

/**
 * The `flightdeck` command. Each command's module loads when the command runs, so a process holds
 * only what its command needs (`start`, which then only watches its children, most of all).
 */

/** A commander option parser for integers in a range. */
function integerIn(min: number, max: number): (value: string) => number {
  return (value) => {
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < min || parsed > max) {
      throw new InvalidArgumentError(`expected an integer from ${min} to ${max}`);
    }
    return parsed;
  };
}

const admin = () => import('./commands/admin.js');

function withConfig<A extends unknown[]>(action: (config: Config, ...args: A) => Promise<void>) {
  return async (...args: A) => {
    try {
      await action(loadConfig(), ...args);
    } catch (error) {
      const message = error instanceof ConfigError || error instanceof Error ? error.message : String(error);
      process.stderr.write(`flightdeck: ${printable(message)}\n`);
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
  .action(withConfig(async (config) => (await import('./commands/start.js')).startCommand(config)));

program
  .command('api')
  .description('Run the HTTP API only (needs DATABASE_URL and TEMPORAL_ADDRESS)')
  .action(withConfig(async (config) => (await import('./commands/api.js')).apiCommand(config)));

program
  .command('worker')
  .description('Run a Temporal worker and outbox relay only (needs DATABASE_URL and TEMPORAL_ADDRESS)')
  .action(withConfig(async (config) => (await import('./commands/worker.js')).workerCommand(config)));

program
  .command('prepare', { hidden: true })
  .description('Migrations and the default workspace, for `flightdeck start` (run by it)')
  .action(withConfig(async (config) => (await import('./commands/prepare.js')).prepareCommand(config)));

program
  .command('migrate')
  .description('Apply database migrations')
  .action(withConfig(async (config) => (await admin()).migrateCommand(config)));

program
  .command('workspace')
  .description('Manage workspaces')
  .command('create')
  .description('Create a workspace')
  .requiredOption('--name <name>', 'display name')
  .option('--slug <slug>', 'URL-friendly id, unique (default: derived from the name)')
  .action(
    withConfig(async (config, options: { name: string; slug?: string }) =>
      (await admin()).createWorkspaceCommand(config, options),
    ),
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
    withConfig(async (config, options: { workspace: string; name: string; agent?: string }) =>
      (await admin()).createApiKeyCommand(config, options),
    ),
  );

const adminCommands = program.command('admin').description('Operator commands on the database');
adminCommands
  .command('reseal')
  .description(
    'Bind secrets stored before this version (fd1:) to their workspace and record (fd2:); safe to rerun',
  )
  .action(withConfig(async (config) => (await admin()).resealCommand(config)));
const apiKeys = adminCommands.command('api-keys').description("A workspace's API keys");
apiKeys
  .command('list')
  .description("List a workspace's API keys (prefix, job agent, created, last used, revoked); never the keys")
  .requiredOption('--workspace <id>', 'workspace id')
  .action(
    withConfig(async (config, options: { workspace: string }) =>
      (await admin()).listApiKeysCommand(config, options),
    ),
  );
apiKeys
  .command('revoke')
  .description('Revoke an API key: it stops authenticating at once')
  .requiredOption('--workspace <id>', 'workspace id')
  .argument('<keyId>', 'the key id (from `admin api-keys list`)')
  .action(
    withConfig(async (config, keyId: string, options: { workspace: string }) =>
      (await admin()).revokeApiKeyCommand(config, options, keyId),
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
      await (await import('./commands/agent.js')).runAgentCommand(options);
    } catch (error) {
      process.stderr.write(`flightdeck agent: ${printable((error as Error).message)}\n`);
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
  process.exitCode = await (await import('./commands/apply.js')).applyCommand(options);
});

withWorkspaceConnection(
  program
    .command('explain')
    .description('Why a release target is (not) on a version: each rule, the slot, what happens next')
    .requiredOption('--target <key>', 'the release target: <resourceId>-<environmentId>-<deploymentId>')
    .option('--version <id>', 'a version of the deployment (default: its newest ready one)')
    .option('--json', 'print the API answer instead of the table'),
).action(async (options: ExplainCommandOptions) => {
  process.exitCode = await (await import('./commands/explain.js')).explainCommand(options);
});

const skip = program
  .command('skip')
  .description('Policy skips: let a version pass one policy rule on a scope until a time, with a reason');
withWorkspaceConnection(
  skip
    .command('create')
    .description("Let a version's releases pass one gate rule; they look again at once")
    .requiredOption('--rule <id>', "the rule's id (GET /policies/{id} shows them)")
    .requiredOption('--version <id>', 'the version')
    .option('--environment <id>', 'only in this environment')
    .option('--resource <id>', 'only on this resource')
    .requiredOption('--reason <text>', 'why: recorded, and shown in explain')
    .option('--expires-at <time>', 'ISO 8601 (default: FLIGHTDECK_POLICY_SKIP_DEFAULT_SECONDS from now)'),
).action(async (options: SkipCreateOptions) => {
  process.exitCode = await (await import('./commands/skip.js')).skipCreateCommand(options);
});
withWorkspaceConnection(
  skip
    .command('list')
    .description("The workspace's policy skips, newest first")
    .option('--version <id>', 'of this version')
    .option('--rule <id>', 'of this rule')
    .option('--active <true|false>', 'only those still counting (true) or expired (false)'),
).action(async (options: SkipListOptions) => {
  process.exitCode = await (await import('./commands/skip.js')).skipListCommand(options);
});
withWorkspaceConnection(
  skip.command('delete <id>').description('Delete a policy skip: the rule counts again'),
).action(async (id: string, options: WorkspaceConnectionOptions) => {
  process.exitCode = await (await import('./commands/skip.js')).skipDeleteCommand(id, options);
});

for (const verb of ['approve', 'reject'] as const) {
  withWorkspaceConnection(
    program
      .command(`${verb} <releaseId>`)
      .description(
        verb === 'approve'
          ? "Approve a release's version in its environment, bound to what it would ship now"
          : "Reject a release's version in its environment: it is blocked there",
      )
      .option('--reason <text>', 'why: recorded with your key'),
  ).action(async (releaseId: string, options: DecisionOptions) => {
    process.exitCode = await (
      await import('./commands/approve.js')
    ).decisionCommand(verb, releaseId, options);
  });
}

const hold = program
  .command('hold')
  .description('Holds: block or pin the release targets a selector matches; a scheduled block is a freeze');
withWorkspaceConnection(
  hold
    .command('create')
    .description('Block or pin the targets a CEL selector over deployment, environment and resource matches')
    .requiredOption('--selector <cel>', 'the targets, e.g. environment.name == "production"')
    .requiredOption(
      '--effect <block|pin>',
      'block: nothing new starts, queued jobs wait; pin: stay on --version',
    )
    .option('--version <id>', "a pin's version")
    .requiredOption('--reason <text>', 'why: recorded, and shown in explain')
    .option('--expires-at <time>', 'ISO 8601 (default: until deleted)')
    .option('--rrule <rule>', 'a freeze: RFC 5545 rule of its windows (HOURLY or coarser)')
    .option('--duration-seconds <n>', "a freeze: each window's length")
    .option('--time-zone <zone>', "a freeze: the rule's IANA time zone (default UTC)"),
).action(async (options: HoldCreateOptions) => {
  process.exitCode = await (await import('./commands/hold.js')).holdCreateCommand(options);
});
withWorkspaceConnection(
  hold
    .command('list')
    .description("The workspace's holds, newest first")
    .option('--effect <block|pin>', 'of this effect')
    .option('--active <true|false>', 'only unexpired (true) or expired (false) ones'),
).action(async (options: HoldListOptions) => {
  process.exitCode = await (await import('./commands/hold.js')).holdListCommand(options);
});
withWorkspaceConnection(
  hold.command('delete <id>').description('Delete a hold: what it held goes on'),
).action(async (id: string, options: WorkspaceConnectionOptions) => {
  process.exitCode = await (await import('./commands/hold.js')).holdDeleteCommand(id, options);
});

program
  .command('opa')
  .description('Open Policy Agent, for plan validation policy rules')
  .command('ensure')
  .description('Find `opa`, building it from Go modules into the user cache if needed; print its path')
  .action(async () => {
    try {
      const { ensureOpa } = await import('./opa.js');
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
        const found = await (await import('./temporalFull.js')).ensureTemporalServer();
        process.stdout.write(`${found.serverPath}\n`);
        process.stderr.write(`(${found.source}) Temporal server ${found.version}\n`);
        return;
      }
      const { ensureTemporalCli, temporalCliVersion } = await import('./temporalCli.js');
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
    withConfig(async (config, options: TemporalServerCommandOptions) =>
      (await import('./commands/temporalServer.js')).temporalServerCommand(config, options),
    ),
  );

void program.parseAsync(process.argv);
