import type { EntityManager } from '@mikro-orm/postgresql';
import type { ReleaseFacts } from '../../../domain/gates';
import type { ReleaseIdentityRow } from '../../../domain/orchestration';
import type { PolicyRule } from '../../../domain/policies';
import { RULE_KIND_NAMES, type RuleKind } from '../../../domain/ruleKinds';
import { uuidArray } from '../../../db/sql';
import type { TargetRecords } from '../policyMatching';

/** What the fact loaders need of the database: statements, nothing else. */
export type SqlReader = Pick<EntityManager, 'execute'>;

/**
 * A release of a batch (or a would-be release), as the loaders read it: its ids, when it was
 * created, its target's records, and the rules of the policies that apply there.
 */
export interface BatchRelease extends ReleaseIdentityRow, TargetRecords {
  created_at: Date;
  rules: PolicyRule[];
}

/** Releases, with their columns as `uuid[]` parameters (db/sql.ts `uuidArray`), in the releases' order. */
export interface ReleaseSet {
  releases: readonly BatchRelease[];
  ids: string;
  versionIds: string;
  environmentIds: string;
  resourceIds: string;
  deploymentIds: string;
  /** Each version once. */
  distinctVersionIds: string;
  /** Each workspace once. */
  distinctWorkspaceIds: string;
}

/**
 * A batch of releases whose facts are read together: its parameters are made once, before any
 * statement, for the whole batch and for the releases under each rule kind its policies hold.
 */
export interface FactBatch extends ReleaseSet {
  under: Partial<Record<RuleKind, ReleaseSet>>;
}

function releaseSet(releases: readonly BatchRelease[]): ReleaseSet {
  const column = (pick: (release: BatchRelease) => string) => uuidArray(releases.map(pick));
  const distinct = (pick: (release: BatchRelease) => string) => uuidArray([...new Set(releases.map(pick))]);
  return {
    releases,
    ids: column((release) => release.id),
    versionIds: column((release) => release.version_id),
    environmentIds: column((release) => release.environment_id),
    resourceIds: column((release) => release.resource_id),
    deploymentIds: column((release) => release.deployment_id),
    distinctVersionIds: distinct((release) => release.version_id),
    distinctWorkspaceIds: distinct((release) => release.workspace_id),
  };
}

export function factBatch(releases: readonly BatchRelease[]): FactBatch {
  const under = (kind: RuleKind) =>
    releases.filter((release) => release.rules.some((rule) => rule[kind] !== undefined));
  return {
    ...releaseSet(releases),
    under: Object.fromEntries(
      RULE_KIND_NAMES.flatMap((kind) => {
        const held = under(kind);
        return held.length > 0 ? [[kind, releaseSet(held)]] : [];
      }),
    ),
  };
}

/** Each release's part of the facts, by release id: the fields `Field`, those absent for it left out. */
export type FactParts<Field extends keyof ReleaseFacts> = Map<string, Pick<ReleaseFacts, Field>>;

/**
 * One family of the facts the gates read (domain/rules/), which its module
 * (engine/eligibility/facts/<family>.ts) exports: `load` reads the family for a whole batch of
 * releases, a statement or two whatever the batch's size (none when no release's rules read it),
 * never one per release, and answers every release's part.
 */
export interface FactLoader<Field extends keyof ReleaseFacts> {
  load: (sql: SqlReader, batch: FactBatch) => Promise<FactParts<Field>>;
}

/** A time as the facts hold it, from a row's `Date` or a JSON column's text. */
export const iso = (value: Date | string | number) => new Date(value).toISOString();
