import {
  answer,
  runWorkspaceCommand,
  stderr,
  stdout,
  type WorkspaceConnectionOptions,
} from './workspaceConnection';

/** `flightdeck approve|reject <releaseId>`: one key's decision on a release's version in its environment. */
export interface DecisionOptions extends WorkspaceConnectionOptions {
  reason?: string;
}

interface DecisionAnswer {
  versionId: string;
  environmentId: string;
  status: string;
  userName: string;
  reason?: string | null;
  detail?: string;
}

/** `flightdeck approve|reject`: exit 0 with the recorded decision, 1 when refused. */
export function decisionCommand(
  verb: 'approve' | 'reject',
  releaseId: string,
  options: DecisionOptions,
  out = stdout,
  err = stderr,
): Promise<number> {
  return runWorkspaceCommand(verb, options, err, async (client, workspaceId) => {
    const response = await client.request<DecisionAnswer>(
      'POST',
      `v1/workspaces/${workspaceId}/releases/${encodeURIComponent(releaseId)}/${verb}`,
      options.reason ? { reason: options.reason } : {},
    );
    return answer(verb, response, out, err, (decision) => [
      `${decision.status} version ${decision.versionId} in environment ${decision.environmentId} by ${decision.userName}` +
        (decision.reason ? `: ${decision.reason}` : ''),
    ]);
  });
}
