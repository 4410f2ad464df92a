import type { EntityManager } from '@mikro-orm/postgresql';
import type { Database } from '../db/database';
import { ApiKeyStore } from '../application/apiKeys';
import { WorkspaceStore } from '../application/workspaces';
import { credentialsFile, readCredentials, writeCredentials } from './state';

export interface DefaultWorkspace {
  workspaceId: string;
  /** Known when this start created it, or when the credentials file still holds it. */
  apiKey?: string;
  credentialsFile: string;
  created: boolean;
}

/**
 * On first start, a workspace named "default" and an API key for it, written to the data
 * directory (mode 0600) so every later start can print them again.
 */
export async function ensureDefaultWorkspace(orm: Database, dataDir: string): Promise<DefaultWorkspace> {
  const em = orm.em.fork() as EntityManager;
  const workspaces = new WorkspaceStore(em);
  const file = credentialsFile(dataDir);
  const existing = await workspaces.oldest();
  if (existing) {
    const saved = readCredentials(dataDir);
    return {
      workspaceId: existing.id,
      apiKey: saved?.workspaceId === existing.id ? saved.apiKey : undefined,
      credentialsFile: file,
      created: false,
    };
  }
  const workspace = await workspaces.create({ name: 'Default', slug: 'default' });
  const issued = await new ApiKeyStore(em).create({
    workspaceId: workspace.id,
    name: 'default (flightdeck start)',
  });
  writeCredentials(dataDir, { workspaceId: workspace.id, apiKey: issued.key });
  return { workspaceId: workspace.id, apiKey: issued.key, credentialsFile: file, created: true };
}
