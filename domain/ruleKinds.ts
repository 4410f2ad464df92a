/**
 * The kinds a policy rule may be (Ctrlplane's rule kinds), one per rule. Kept apart from their
 * schemas (domain/policies.ts), so a module that only needs the names does not build the schemas:
 * with zod 4 a schema built before api/schemas/zod.ts extends zod lacks `.openapi`.
 */
export const RULE_KIND_NAMES = [
  'anyApproval',
  'environmentProgression',
  'deploymentWindow',
  'versionSelector',
  'versionCooldown',
  'retry',
  'gradualRollout',
  'verification',
  'deploymentDependency',
  'planValidationOpa',
  'rollback',
  'waves',
] as const;

export type RuleKind = (typeof RULE_KIND_NAMES)[number];

/** The one kind a rule holds. */
export function ruleKind(rule: Partial<Record<RuleKind, unknown>>): RuleKind {
  return RULE_KIND_NAMES.find((kind) => rule[kind] !== undefined)!;
}
