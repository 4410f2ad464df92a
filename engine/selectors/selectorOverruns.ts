import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { formatUnits } from '../../domain/celMeter';
import {
  reportOverrunsTo,
  type HeldSelector,
  type SelectorOverrun,
  type SelectorScope,
} from '../../domain/selectors';
import type { Database } from '../../db/database';

/**
 * Saved selectors that turned out slow (docs/security.md "CEL budget"): an evaluation
 * stopped by its budget does not match, and is reported here. The process collects overruns as
 * they happen and writes them every few seconds, one row per scope and expression (how many times,
 * the most one cost, when last), so a selector evaluated on thousands of records costs one upsert.
 * Every record holding the expression shows the warning (`selectorWarnings`), and so does explain.
 */

/** How often collected overruns are written. */
const FLUSH_MS = 2_000;
/** Distinct overruns kept between two writes; more are counted on the next. */
const PENDING_LIMIT = 1_000;
/** An overrun not seen again for this long is forgotten. */
const KEEP_DAYS = 7;

export interface SelectorWarning {
  /** The field of the record that holds the selector, e.g. `resourceSelector`, `rules[0].versionSelector`. */
  path: string;
  message: string;
  lastSeenAt: string;
}

const hashOf = (expression: string) => createHash('sha256').update(expression).digest('hex');

interface Pending {
  scope: SelectorScope;
  expression: string;
  spent: number;
  times: number;
  at: Date;
}

class SelectorOverrunLog {
  private pending = new Map<string, Pending>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private orm: Database) {}

  record(overrun: SelectorOverrun): void {
    const key = `${overrun.scope}\u0000${overrun.expression}`;
    const known = this.pending.get(key);
    if (known) {
      known.spent = Math.max(known.spent, overrun.spent);
      known.times++;
      known.at = new Date();
    } else if (this.pending.size < PENDING_LIMIT) {
      this.pending.set(key, { ...overrun, times: 1, at: new Date() });
    }
  }

  writeTo(orm: Database): void {
    this.orm = orm;
    this.timer ??= setInterval(() => void this.flush(), FLUSH_MS).unref();
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const rows = [...this.pending.values()];
    this.pending = new Map();
    try {
      await (this.orm.em.fork() as EntityManager).execute(
        `INSERT INTO selector_overrun (scope, expression_hash, expression, spent, times, first_seen_at, last_seen_at)
         SELECT r.scope, r.hash, r.expression, r.spent, r.times, r.at, r.at
           FROM jsonb_to_recordset(?::jsonb) AS r(scope text, hash text, expression text, spent float8, times int8, at timestamptz)
         ON CONFLICT (scope, expression_hash) DO UPDATE
            SET spent = greatest(selector_overrun.spent, excluded.spent),
                times = selector_overrun.times + excluded.times,
                last_seen_at = excluded.last_seen_at`,
        [JSON.stringify(rows.map((row) => ({ ...row, hash: hashOf(row.expression) })))],
      );
      await (this.orm.em.fork() as EntityManager).execute(
        `DELETE FROM selector_overrun WHERE last_seen_at < now() - make_interval(days => ?)`,
        [KEEP_DAYS],
      );
    } catch {
      // The database is away (the process is stopping, or PostgreSQL restarts): the next overrun reports again.
    }
  }
}

let log: SelectorOverrunLog | undefined;

/**
 * Records this process's selector overruns in `orm`'s database (the API's and the worker's
 * processes each call it; a process that runs both shares one log). Returns a flush, for tests and
 * for a process that stops.
 */
export function recordSelectorOverruns(orm: Database): () => Promise<void> {
  if (!log) {
    const created = new SelectorOverrunLog(orm);
    reportOverrunsTo((overrun) => created.record(overrun));
    log = created;
  }
  log.writeTo(orm);
  const current = log;
  return () => current.flush();
}

/** The warnings of the selectors records hold, by record, in the order given. */
export async function selectorWarnings(
  em: EntityManager,
  held: readonly HeldSelector[][],
): Promise<SelectorWarning[][]> {
  const keyed = held.map((selectors) =>
    selectors
      .filter((s): s is HeldSelector & { expression: string } => typeof s.expression === 'string')
      .map((s) => ({ ...s, hash: hashOf(s.expression) })),
  );
  const hashes = [...new Set(keyed.flat().map((s) => s.hash))];
  if (hashes.length === 0) return held.map(() => []);
  const rows = await em.execute<
    { scope: string; expression_hash: string; spent: number; times: string; last_seen_at: Date }[]
  >(
    `SELECT scope, expression_hash, spent, times, last_seen_at FROM selector_overrun WHERE expression_hash = ANY(?::text[])`,
    [`{${hashes.join(',')}}`],
  );
  const found = new Map(rows.map((row) => [`${row.scope}\u0000${row.expression_hash}`, row]));
  return keyed.map((selectors) =>
    selectors.flatMap((s) => {
      const row = found.get(`${s.scope}\u0000${s.hash}`);
      if (!row) return [];
      return [
        {
          path: s.path,
          message: `its evaluation was stopped by its budget ${row.times} time(s), after up to ${formatUnits(row.spent)} on one record; it did not match there`,
          lastSeenAt: new Date(row.last_seen_at).toISOString(),
        },
      ];
    }),
  );
}
