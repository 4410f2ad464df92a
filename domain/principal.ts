/**
 * Who is calling: a workspace's API key (scoped to one job agent when `jobAgentId` is set), or the
 * operator holding the admin token.
 */
export type Principal =
  | { kind: 'apiKey'; workspaceId: string; apiKeyId: string; keyName: string; jobAgentId: string | null }
  | { kind: 'admin' };

/** A workspace's API key as a principal. */
export type ApiKeyPrincipal = Extract<Principal, { kind: 'apiKey' }>;
