import type { Explanation } from '../../domain/explain';
import { printable } from '../terminalText';
import { runWorkspaceCommand, type WorkspaceConnectionOptions, type Write } from './workspaceConnection';

export interface ExplainCommandOptions extends WorkspaceConnectionOptions {
  target: string;
  version?: string;
  json?: boolean;
}

const MARK = { passed: '✓', waiting: '…', blocked: '✗' } as const;

/** Columns padded to their widest cell. */
function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) =>
    row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  '),
  );
}

/** An explanation as a person reads it: the verdict, each rule, the slot, what happens next. */
export function renderExplanation(explanation: Explanation): string[] {
  const release = explanation.release
    ? `release ${explanation.release.id} (${explanation.release.phase})`
    : 'no release yet';
  const lines = [
    `Version ${explanation.version.tag}: ${release}`,
    `Decision: ${explanation.decision} — ${explanation.reason}`,
    '',
    ...table([
      ['', 'RULE', 'STATE', 'REASON'],
      ...explanation.rules.map((rule) => [
        MARK[rule.state],
        rule.kind,
        rule.state,
        [
          rule.reason,
          rule.approvedBy?.length ? `approved by ${rule.approvedBy.join(', ')}` : '',
          rule.nextEvaluationAt ? `changes at ${rule.nextEvaluationAt}` : '',
        ]
          .filter(Boolean)
          .join('; '),
      ]),
    ]),
    '',
  ];
  const { slot } = explanation;
  lines.push(
    `Current: ${slot.currentRelease ? `${slot.currentRelease.versionTag} (release ${slot.currentRelease.id})` : 'nothing deployed'}`,
  );
  lines.push(
    `Slot: ${slot.activeRelease ? `held by release ${slot.activeRelease.id} (${slot.activeRelease.versionTag}, ${slot.activeRelease.phase})` : 'free'}`,
  );
  for (const job of slot.activeJobs) {
    lines.push(
      `  job ${job.id} ${job.status}${job.agent ? ` on ${job.agent.name} (${job.agent.type})` : ''} since ${job.startedAt ?? job.createdAt}`,
    );
  }
  lines.push(`Next: ${explanation.next}`);
  for (const warning of explanation.selectorWarnings ?? []) {
    lines.push(
      `Warning: ${warning.record.type} ${warning.record.name} ${warning.path}: ${warning.message} (last ${warning.lastSeenAt})`,
    );
  }
  return lines;
}

/** `flightdeck explain --target <key> [--version <id>]`: exit 0 with the explanation, 1 when refused. */
export async function explainCommand(
  options: ExplainCommandOptions,
  out: Write = (line) => process.stdout.write(`${line}\n`),
  err: Write = (line) => process.stderr.write(`${line}\n`),
): Promise<number> {
  return runWorkspaceCommand('explain', options, err, async (client, workspaceId) => {
    const query = options.version ? `?versionId=${encodeURIComponent(options.version)}` : '';
    const response = await client.request<Explanation & { detail?: string }>(
      'GET',
      `v1/workspaces/${workspaceId}/release-targets/${encodeURIComponent(options.target)}/explain${query}`,
    );
    if (response.status !== 200) {
      err(printable(`flightdeck explain: ${response.status} ${response.body?.detail ?? ''}`.trim()));
      return 1;
    }
    // JSON escapes a line break inside a string, so each line of it is a line of the document; the
    // escapes `printable` adds (C1 and bidirectional controls) are JSON escapes of the same text.
    const lines = options.json
      ? JSON.stringify(response.body, null, 2).split('\n')
      : renderExplanation(response.body);
    for (const line of lines) out(printable(line));
    return 0;
  });
}
