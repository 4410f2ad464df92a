import type { EntityManager } from '@mikro-orm/postgresql';
import type { HeldSelector } from '../domain/selectors';
import { selectorWarnings, type SelectorWarning } from '../engine/selectors';

/** The warnings records show for their selectors that turned out slow (engine/selectors/selectorOverruns.ts). */
export class SelectorOverrunStore {
  constructor(private readonly em: EntityManager) {}

  warnings(held: readonly HeldSelector[][]): Promise<SelectorWarning[][]> {
    return selectorWarnings(this.em, held);
  }
}
