import { OverBudgetError } from '../../domain/errors';
import { CelQuery, recordContext, RequestBudget, type RecordScope } from '../../domain/selectors';

/** A stored record as a filter reads it: its fields by property name, JSON values as text, timestamps as epoch ms. */
export type StoredRow = { id: string } & Record<string, unknown>;

/** Which of a row's fields hold JSON text and which epoch milliseconds. */
export interface RowShape {
  json: string[];
  dates: string[];
}

/** The record a row holds: JSON parsed, timestamps as dates. */
export function recordOf<T>(row: StoredRow, shape: RowShape): T {
  const record: Record<string, unknown> = { ...row };
  for (const name of shape.json)
    if (typeof record[name] === 'string') record[name] = JSON.parse(record[name]);
  for (const name of shape.dates) if (typeof record[name] === 'number') record[name] = new Date(record[name]);
  return record as T;
}

/** Rows to judge with one request's expression, and what the request's budget has spent so far. */
export interface RowBatch {
  scope: RecordScope;
  expression: string;
  budget: { limit: number; spent: number; evaluations: number };
  rows: StoredRow[];
  shape: RowShape;
}

/** Whether each row matched, and the budget after them; or why the evaluation stopped. */
export type RowVerdicts =
  { matched: boolean[]; spent: number; evaluations: number } | { overBudget: string } | { failed: string };

/** Judges a batch of rows: each parsed and evaluated in turn, on the request's budget. */
export function judgeRows(batch: RowBatch): RowVerdicts {
  const budget = new RequestBudget(batch.budget.limit);
  budget.spent = batch.budget.spent;
  budget.evaluations = batch.budget.evaluations;
  try {
    const query = new CelQuery(batch.scope, batch.expression, budget);
    const matched = batch.rows.map((row) =>
      query.matches(recordContext(batch.scope, recordOf(row, batch.shape))),
    );
    return { matched, spent: budget.spent, evaluations: budget.evaluations };
  } catch (error) {
    if (error instanceof OverBudgetError) return { overBudget: error.message };
    return { failed: error instanceof Error ? error.message : String(error) };
  }
}
