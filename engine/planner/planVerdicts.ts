import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { PlanValidationInput, PlanVerdict } from '../../domain/planValidation';

/** What a verdict holds for: the rule's Rego and the plan (its `input`), as one digest. */
export function planDigest(rego: string, input: PlanValidationInput | null): string {
  return createHash('sha256')
    .update(JSON.stringify([rego, input]))
    .digest('hex');
}

/** The release's recorded verdicts, by rule id, of the rules whose digest they still hold for. */
export async function recordedPlanVerdicts(
  em: EntityManager,
  releaseId: string,
  wanted: readonly { ruleId: string; digest: string }[],
): Promise<Record<string, PlanVerdict>> {
  if (wanted.length === 0) return {};
  const rows = await em.execute<{ rule_id: string; verdict: PlanVerdict }[]>(
    `SELECT p.rule_id, p.verdict
       FROM plan_verdict p
       JOIN jsonb_to_recordset(?::jsonb) AS w(rule_id uuid, digest text)
         ON w.rule_id = p.rule_id AND w.digest = p.digest
      WHERE p.release_id = ?`,
    [JSON.stringify(wanted.map((key) => ({ rule_id: key.ruleId, digest: key.digest }))), releaseId],
  );
  return Object.fromEntries(rows.map((row) => [row.rule_id, row.verdict]));
}
