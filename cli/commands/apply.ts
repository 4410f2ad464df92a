import {
  connect,
  missingConnection,
  workspaceOf,
  type WorkspaceConnectionOptions,
} from './workspaceConnection';
import { applyDocuments, ApplyRefused, ApplyStopped, type Change } from '../apply/applier';
import { readDocuments } from '../apply/documents';
import { WorkspaceApi } from '../apply/workspaceApi';
import { printable } from '../terminalText';

export interface ApplyCommandOptions extends WorkspaceConnectionOptions {
  file: string[];
  dryRun?: boolean;
  rewriteSecrets?: boolean;
}

type Write = (line: string) => void;

const VERBS: Record<Change['action'], { done: string; planned: string; mark: string }> = {
  create: { done: 'created', planned: 'would create', mark: '+' },
  update: { done: 'updated', planned: 'would update', mark: '~' },
  unchanged: { done: 'unchanged', planned: 'unchanged', mark: '=' },
};

/**
 * `flightdeck apply -f FILE...`: reads and checks every document first (nothing is written when
 * any is wrong), then brings the workspace in line, one line of progress per record. Answers the
 * process exit code: 0 applied (or nothing to do), 1 refused or stopped.
 */
export async function applyCommand(
  options: ApplyCommandOptions,
  print: Write = (line) => process.stdout.write(`${line}\n`),
  printError: Write = (line) => process.stderr.write(`${line}\n`),
): Promise<number> {
  // Lines quote the documents and the server's refusals: their control characters are escaped.
  const out: Write = (line) => print(printable(line));
  const err: Write = (line) => printError(printable(line));
  const missing = missingConnection(options);
  if (missing) {
    err(`flightdeck apply: ${missing}`);
    return 1;
  }
  let read: ReturnType<typeof readDocuments>;
  try {
    read = readDocuments(options.file);
  } catch (error) {
    err(`flightdeck apply: ${(error as Error).message}; nothing was changed.`);
    return 1;
  }
  const { documents, errors } = read;
  if (errors.length > 0) {
    for (const error of errors) err(error.message);
    err(`flightdeck apply: ${errors.length} invalid document(s); nothing was changed.`);
    return 1;
  }
  const client = connect(options);
  try {
    const workspaceId = await workspaceOf(client, options);
    const dryRun = options.dryRun ?? false;
    out(
      `${dryRun ? 'Planning' : 'Applying'} ${documents.length} document(s) from ${options.file.join(', ')} to workspace ${workspaceId}`,
    );
    const changes = await applyDocuments(documents, new WorkspaceApi(client, workspaceId), {
      dryRun,
      rewriteSecrets: options.rewriteSecrets ?? false,
      onChange: (change) => out(describe(change, dryRun)),
    });
    out(summary(changes, dryRun));
    return 0;
  } catch (error) {
    if (error instanceof ApplyRefused) {
      for (const refusal of error.errors) err(refusal.message);
      err(
        `flightdeck apply: ${error.errors.length} document(s) refer to missing records; nothing was changed.`,
      );
    } else if (error instanceof ApplyStopped) {
      err(error.message);
      const written = error.applied.filter((change) => change.action !== 'unchanged').length;
      err(
        `flightdeck apply: stopped; ${written} record(s) were changed before. Fix the document and apply again.`,
      );
    } else {
      err(`flightdeck apply: ${(error as Error).message}`);
    }
    return 1;
  } finally {
    client.close();
  }
}

function describe(change: Change, dryRun: boolean): string {
  const verb = VERBS[change.action];
  const fields = change.action === 'update' ? ` (${change.fields.join(', ')})` : '';
  return `  ${verb.mark} ${change.label} ${dryRun ? verb.planned : verb.done}${fields}  [${change.source.file}#${change.source.index}]`;
}

function summary(changes: Change[], dryRun: boolean): string {
  const count = (action: Change['action']) => changes.filter((change) => change.action === action).length;
  const created = count('create');
  const updated = count('update');
  const unchanged = count('unchanged');
  if (created + updated === 0) return `No changes: all ${unchanged} record(s) are up to date.`;
  return dryRun
    ? `Dry run: ${created} to create, ${updated} to update, ${unchanged} unchanged. Nothing was changed.`
    : `Applied: ${created} created, ${updated} updated, ${unchanged} unchanged.`;
}
