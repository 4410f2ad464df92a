import type { EntityManager } from '@mikro-orm/postgresql';
import { legacySealsRetiredAt, retireLegacySeals } from './legacySeals';
import { SecretBox, type RecordSecrets, type SealOwnerKind } from './secrets';

/** A table holding sealed values: its JSON columns, its row key, and the owner each row's values are bound to. */
interface SealedTable {
  table: string;
  columns: readonly string[];
  /** A text expression naming the row, for paging and the update. */
  key: string;
  /** The joins that reach the owner, if it is not on the row. */
  join?: string;
  workspace: string;
  kind: SealOwnerKind;
  owner: string;
}

const SEALED_TABLES: readonly SealedTable[] = [
  {
    table: 'job_agent',
    columns: ['config'],
    key: 't.id::text',
    workspace: 't.workspace_id',
    kind: 'job_agent',
    owner: 't.id',
  },
  {
    table: 'deployment',
    columns: ['job_agents', 'job_agent_config'],
    key: 't.id::text',
    workspace: 't.workspace_id',
    kind: 'deployment',
    owner: 't.id',
  },
  {
    table: 'deployment_variable',
    columns: ['default_value'],
    key: 't.id::text',
    workspace: 't.workspace_id',
    kind: 'deployment',
    owner: 't.deployment_id',
  },
  {
    table: 'deployment_variable_value',
    columns: ['value'],
    key: 't.id::text',
    join: 'JOIN deployment_variable v ON v.id = t.variable_id',
    workspace: 't.workspace_id',
    kind: 'deployment',
    owner: 'v.deployment_id',
  },
  {
    table: 'deployment_version',
    columns: ['job_agent_config'],
    key: 't.id::text',
    workspace: 't.workspace_id',
    kind: 'version',
    owner: 't.id',
  },
  {
    table: 'resource_variable',
    columns: ['value'],
    key: "t.resource_id::text || '/' || t.key",
    join: 'JOIN resource r ON r.id = t.resource_id',
    workspace: 'r.workspace_id',
    kind: 'resource',
    owner: 't.resource_id',
  },
  {
    table: 'policy',
    columns: ['rules'],
    key: 't.id::text',
    workspace: 't.workspace_id',
    kind: 'policy',
    owner: 't.id',
  },
  {
    table: 'variable_set_variable',
    columns: ['value'],
    key: "t.variable_set_id::text || '/' || t.key",
    join: 'JOIN variable_set s ON s.id = t.variable_set_id',
    workspace: 's.workspace_id',
    kind: 'variable_set',
    owner: 't.variable_set_id',
  },
  {
    table: 'job',
    columns: ['job_agent_config', 'dispatch_context'],
    key: 't.id::text',
    workspace: 't.workspace_id',
    kind: 'release',
    owner: 't.release_id',
  },
  {
    table: 'job_verification',
    columns: ['metrics'],
    key: 't.id::text',
    join: 'JOIN job j ON j.id = t.job_id',
    workspace: 't.workspace_id',
    kind: 'release',
    owner: 'j.release_id',
  },
];

const BATCH = 500;

/**
 * Every string of a JSON value that was sealed before binding, sealed again bound to `owner`. A
 * string that only looks sealed (a plain value starting `fd1:`) does not open and stays as it is.
 */
function resealLegacy(value: unknown, owner: RecordSecrets): { value: unknown; count: number } {
  let count = 0;
  const visit = (item: unknown): unknown => {
    if (SecretBox.isLegacy(item)) {
      try {
        const bound = owner.seal(owner.open(item as string));
        count++;
        return bound;
      } catch {
        return item;
      }
    }
    if (Array.isArray(item)) return item.map(visit);
    if (typeof item === 'object' && item !== null)
      return Object.fromEntries(Object.entries(item).map(([key, inner]) => [key, visit(inner)]));
    return item;
  };
  return { value: visit(value), count };
}

export interface ResealReport {
  table: string;
  rows: number;
  values: number;
}

export interface ResealOutcome {
  tables: ResealReport[];
  /** Rows edited while this run read them: their legacy values are left for the next run. */
  rowsLeft: number;
  /** When legacy values were retired (none opens since): by this run, or by an earlier one. */
  retiredAt?: Date;
  /** Retired by an earlier run: this one rewrote nothing. */
  retiredBefore: boolean;
}

/**
 * `flightdeck admin reseal`: rewrites values sealed before ciphertexts were bound to their
 * workspace and record (`fd1:`) as bound ones (`fd2:`), table by table in batches, each row in its
 * own statement. Safe to run while the service runs (a row edited meanwhile is left for the next
 * run) and to run again: a bound value is left alone. A run that leaves nothing to rewrite retires
 * legacy values (db/legacySeals.ts): none opens any more. After that, a legacy value is never
 * rewritten: one that appears can only have been copied in, and binding it would make it open.
 */
export async function resealLegacyValues(em: EntityManager, box: SecretBox): Promise<ResealOutcome> {
  const retiredBefore = await legacySealsRetiredAt(em);
  if (retiredBefore) return { tables: [], rowsLeft: 0, retiredAt: retiredBefore, retiredBefore: true };
  const reports: ResealReport[] = [];
  let rowsLeft = 0;
  for (const spec of SEALED_TABLES) {
    const report = { table: spec.table, rows: 0, values: 0 };
    const legacy = spec.columns.map((column) => `t.${column}::text LIKE '%"fd1:%'`).join(' OR ');
    let after = '';
    for (;;) {
      const rows = await em.execute<Record<string, unknown>[]>(
        `SELECT ${spec.key} AS row_key, ${spec.workspace}::text AS workspace_id, ${spec.owner}::text AS owner_id,
                ${spec.columns.map((column) => `t.${column}`).join(', ')}
           FROM ${spec.table} t ${spec.join ?? ''}
          WHERE (${legacy}) AND ${spec.key} > ?
          ORDER BY ${spec.key} LIMIT ${BATCH}`,
        [after],
      );
      for (const row of rows) {
        const owner = box.forRecord(String(row.workspace_id), spec.kind, String(row.owner_id));
        const resealed = spec.columns.map((column) => resealLegacy(row[column], owner));
        const values = resealed.reduce((sum, column) => sum + column.count, 0);
        if (values === 0) continue;
        // Only if the row still holds what was read: an edit meanwhile wins (a rerun picks it up).
        const updated = await em.execute<unknown[]>(
          `UPDATE ${spec.table} t SET ${spec.columns.map((column) => `${column} = ?::jsonb`).join(', ')}
            WHERE ${spec.key} = ?
              AND ${spec.columns.map((column) => `t.${column} IS NOT DISTINCT FROM ?::jsonb`).join(' AND ')}
            RETURNING 1`,
          [
            ...resealed.map((column) => JSON.stringify(column.value)),
            row.row_key,
            ...spec.columns.map((column) => (row[column] === null ? null : JSON.stringify(row[column]))),
          ],
        );
        if (updated.length === 0) {
          rowsLeft++;
          continue;
        }
        report.rows++;
        report.values += values;
      }
      if (rows.length < BATCH) break;
      after = String(rows[rows.length - 1]!.row_key);
    }
    reports.push(report);
  }
  if (rowsLeft > 0) return { tables: reports, rowsLeft, retiredBefore: false };
  await retireLegacySeals(em);
  return { tables: reports, rowsLeft, retiredAt: await legacySealsRetiredAt(em), retiredBefore: false };
}
