import type { EntityManager } from '@mikro-orm/postgresql';
import { ValidationError } from '../domain/errors';
import type { Page, PageRequest } from '../domain/pagination';
import { isRedactedMarker } from '../domain/sensitive';
import type { VariableReference } from '../domain/variables';
import {
  VariableSetSchema,
  VariableSetVariableSchema,
  type VariableSet,
  type VariableSetVariable,
} from '../db/entities';
import { newId } from '../db/ids';
import type { SecretBox } from '../db/secrets';
import { storeValue } from '../db/sensitiveValues';
import { definedOnly, findOwned, listPage } from './common';

export interface VariableSetVariableInput {
  key: string;
  sensitive: boolean;
  /** A JSON literal; with `sensitive`, the marker `{"sensitive": true}` keeps the value stored for the key. */
  value?: unknown;
  reference?: VariableReference;
}

export interface VariableSetInput {
  name: string;
  description?: string;
  selector: string;
  priority?: number;
  variables: VariableSetVariableInput[];
}

/** A partial update: what is given replaces what is stored; `variables`, when given, all of them. */
export type VariableSetUpdate = Partial<VariableSetInput>;

export interface VariableSetWithVariables {
  set: VariableSet;
  variables: VariableSetVariable[];
}

/**
 * Ctrlplane's variable sets. A set changes no job already created: its values are read when jobs
 * are created (engine/executor/jobCreation.ts).
 */
export class VariableSetStore {
  constructor(
    private readonly em: EntityManager,
    private readonly secrets: SecretBox,
  ) {}

  create(workspaceId: string, input: VariableSetInput): Promise<VariableSetWithVariables> {
    return this.em.transactional(async (em) => {
      const set = em.create(VariableSetSchema, {
        id: newId(),
        workspaceId,
        name: input.name,
        description: input.description ?? '',
        selector: input.selector,
        priority: input.priority ?? 0,
      });
      // Its variables' rows refer to it, and the unit of work knows no relation to order them by.
      await em.flush();
      const variables = await this.replaceVariables(em, set, input.variables);
      return { set, variables };
    });
  }

  update(workspaceId: string, id: string, update: VariableSetUpdate): Promise<VariableSetWithVariables> {
    return this.em.transactional(async (em) => {
      const set = await findOwned(em, VariableSetSchema, workspaceId, id, 'variable set');
      const { variables: given, ...fields } = update;
      em.assign(set, definedOnly(fields));
      // The row changes even when only its variables do, so `updatedAt` says when the set last changed.
      set.updatedAt = new Date();
      const variables = given
        ? await this.replaceVariables(em, set, given)
        : await this.variablesOf(em, [set.id]);
      await em.flush();
      return { set, variables };
    });
  }

  async get(workspaceId: string, id: string): Promise<VariableSetWithVariables> {
    const set = await findOwned(this.em, VariableSetSchema, workspaceId, id, 'variable set');
    return { set, variables: await this.variablesOf(this.em, [set.id]) };
  }

  async list(workspaceId: string, page: PageRequest): Promise<Page<VariableSetWithVariables>> {
    const sets = await listPage(this.em, VariableSetSchema, { workspaceId }, page);
    const variables = await this.variablesOf(
      this.em,
      sets.items.map((set) => set.id),
    );
    return {
      ...sets,
      items: sets.items.map((set) => ({
        set,
        variables: variables.filter((variable) => variable.variableSetId === set.id),
      })),
    };
  }

  delete(workspaceId: string, id: string): Promise<VariableSet> {
    return this.em.transactional(async (em) => {
      const set = await findOwned(em, VariableSetSchema, workspaceId, id, 'variable set');
      await em.remove(set).flush();
      return set;
    });
  }

  private variablesOf(em: EntityManager, setIds: string[]): Promise<VariableSetVariable[]> {
    return em.find(
      VariableSetVariableSchema,
      { variableSetId: setIds },
      { orderBy: { variableSetId: 'asc', key: 'asc' } },
    );
  }

  /** The set's variables become exactly `variables`; sensitive values sealed as the set's. */
  private async replaceVariables(
    em: EntityManager,
    set: VariableSet,
    variables: VariableSetVariableInput[],
  ): Promise<VariableSetVariable[]> {
    const secrets = this.secrets.forRecord(set.workspaceId, 'variable_set', set.id);
    const stored = new Map((await this.variablesOf(em, [set.id])).map((v) => [v.key, v]));
    const kept = variables.map((variable, index) => {
      const current = stored.get(variable.key);
      stored.delete(variable.key);
      let value: unknown = null;
      if (variable.reference === undefined && variable.sensitive && isRedactedMarker(variable.value)) {
        if (!current?.sensitive || current.value === null) {
          throw new ValidationError('A sensitive value can only be kept if one is stored', [
            {
              path: `body.variables[${index}].value`,
              message: `no stored sensitive value of ${variable.key} to keep; send the value itself`,
            },
          ]);
        }
        value = current.value;
      } else if (variable.reference === undefined) {
        value = storeValue(secrets, variable.value, variable.sensitive);
      }
      const fields = { value, reference: variable.reference ?? null, sensitive: variable.sensitive };
      return current
        ? em.assign(current, fields)
        : em.create(VariableSetVariableSchema, { variableSetId: set.id, key: variable.key, ...fields });
    });
    for (const gone of stored.values()) em.remove(gone);
    await em.flush();
    return kept.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }
}
