import type { EntityManager } from '@mikro-orm/postgresql';
import { agentDestination, metricProviderDestination } from '../domain/credentialBinding';
import { ConflictError, ValidationError } from '../domain/errors';
import type { JobAgentType } from '../domain/jobAgentTypes';
import { SENSITIVE_CONFIG_KEYS } from '../domain/sensitive';
import {
  replaceSecretReferences,
  secretReferencesIn,
  type SecretReference,
} from '../domain/secretReferences';
import type { SecretBox } from './secrets';
import { mapProviderSecrets } from './sensitiveValues';

/**
 * References to workspace secrets (docs/security.md "Workspace secrets"): bound when a record that sends
 * credentials somewhere is written, resolved where the credential is used, and only in the fields
 * that hold credentials (a reference anywhere else is plain text: it is never resolved into a
 * request's URL or body, where a receiver could echo it back).
 */

/** A `workspace_secret` row (db/migrations/Migration0041WorkspaceSecrets.ts). */
export interface SecretRow {
  id: string;
  name: string;
  value: string;
  destination: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The names references give, once each, as a PostgreSQL array literal (names hold no character it quotes). */
const nameArray = (references: readonly SecretReference[]) =>
  `{${[...new Set(references.map((reference) => reference.name))].join(',')}}`;

/**
 * Binds the secrets a record about to be stored references to the record's destination: 400 for a
 * secret the workspace does not have, 409 `credential_destination_changed` for one bound elsewhere.
 * Runs in the record's transaction.
 */
export async function bindSecretReferences(
  em: EntityManager,
  workspaceId: string,
  references: readonly SecretReference[],
  destination: string,
): Promise<void> {
  if (references.length === 0) return;
  const names = nameArray(references);
  const rows = await em.execute<{ name: string; destination: string | null }[]>(
    `UPDATE workspace_secret SET destination = coalesce(destination, ?)
      WHERE workspace_id = ? AND name = ANY(?::text[]) RETURNING name, destination`,
    [destination, workspaceId, names],
  );
  const found = new Map(rows.map((row) => [row.name, row.destination]));
  const missing = references.filter((reference) => !found.has(reference.name));
  if (missing.length > 0)
    throw new ValidationError(
      'A secret reference names a workspace secret: write the secret first (PUT /secrets/{name})',
      missing.map(({ name, path }) => ({ path, message: `the workspace has no secret named ${name}` })),
    );
  const elsewhere = references.filter((reference) => found.get(reference.name) !== destination);
  if (elsewhere.length > 0)
    throw new ConflictError(
      'A workspace secret is sent only where the first record that referenced it sends it: to use a credential elsewhere, write it as a new secret',
      'credential_destination_changed',
      elsewhere.map(({ name, path }) => ({
        path,
        message: `secret ${name} is bound to another destination`,
      })),
    );
}

/** The references among a job agent configuration's credentials (its sensitive top-level keys). */
export function agentConfigReferences(config: Record<string, unknown>, path: string): SecretReference[] {
  return Object.entries(config).flatMap(([key, value]) =>
    SENSITIVE_CONFIG_KEYS.has(key) ? secretReferencesIn(value, `${path}.${key}`) : [],
  );
}

/** Why a reference could not be resolved where its credential is used. */
export class SecretReferenceError extends Error {}

/**
 * The tree with its `secret://` references replaced by the secrets' values, for a request to
 * `destination`: a secret that is missing, or bound to another destination (or to none yet), is a
 * SecretReferenceError. A tree without references costs no query.
 */
export async function resolveSecretReferences<T>(
  em: EntityManager,
  box: SecretBox,
  workspaceId: string,
  tree: T,
  destination: string,
  references: readonly SecretReference[],
): Promise<T> {
  if (references.length === 0) return tree;
  const rows = await em.execute<SecretRow[]>(
    `SELECT * FROM workspace_secret WHERE workspace_id = ? AND name = ANY(?::text[])`,
    [workspaceId, nameArray(references)],
  );
  const byName = new Map(rows.map((row) => [row.name, row]));
  const values = new Map<string, string>();
  for (const { name } of references) {
    const row = byName.get(name);
    if (!row) throw new SecretReferenceError(`The workspace has no secret named ${name}`);
    if (row.destination !== destination)
      throw new SecretReferenceError(
        row.destination === null
          ? `Workspace secret ${name} is bound to no destination yet: reference it from a job agent or metric provider first`
          : `Workspace secret ${name} is bound to another destination than this request's`,
      );
    values.set(name, box.forRecord(workspaceId, 'workspace_secret', row.name).open(row.value));
  }
  return replaceSecretReferences(tree, values);
}

/** A job with the references among its agent configuration's credentials resolved, for its agent. */
export async function withAgentSecrets<
  J extends { workspaceId: string; agentType?: string | null; jobAgentConfig: Record<string, unknown> },
>(em: EntityManager, box: SecretBox, job: J): Promise<J> {
  const references = agentConfigReferences(job.jobAgentConfig, 'jobAgentConfig');
  if (references.length === 0 || !job.agentType) return job;
  const destination = agentDestination(job.agentType as JobAgentType, job.jobAgentConfig);
  const credentials = Object.fromEntries(
    Object.entries(job.jobAgentConfig).filter(([key]) => SENSITIVE_CONFIG_KEYS.has(key)),
  );
  const resolved = await resolveSecretReferences(
    em,
    box,
    job.workspaceId,
    credentials,
    destination,
    references,
  );
  return { ...job, jobAgentConfig: { ...job.jobAgentConfig, ...resolved } };
}

/** A metric provider with the references among its credentials resolved, for its requests. */
export function withProviderSecrets<P extends object>(
  em: EntityManager,
  box: SecretBox,
  workspaceId: string,
  provider: P,
): Promise<P> {
  const destination = metricProviderDestination(provider as Record<string, unknown>);
  return mapProviderSecrets(provider, (secrets) =>
    resolveSecretReferences(
      em,
      box,
      workspaceId,
      secrets,
      destination,
      secretReferencesIn(secrets, 'provider'),
    ),
  );
}
