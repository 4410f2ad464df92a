import type { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError, NotFoundError, ValidationError } from '../domain/errors';
import type { Page, PageRequest } from '../domain/pagination';
import { isRedactedMarker } from '../domain/sensitive';
import type { VariableReference } from '../domain/variables';
import {
  DeploymentSchema,
  DeploymentVariableSchema,
  DeploymentVariableValueSchema,
  type DeploymentVariable,
  type DeploymentVariableValue,
} from '../db/entities';
import { conflictOnDuplicate } from '../db/errors';
import type { SecretBox } from '../db/secrets';
import { storeValue } from '../db/sensitiveValues';
import { findOwned, type Upserted } from './common';

export interface VariableInput {
  key: string;
  description?: string | null;
  /** A JSON literal; absent means no default. */
  defaultValue?: unknown;
  sensitive?: boolean;
}

export type VariableValueInput = {
  priority: number;
  resourceSelector?: string | null;
  sensitive?: boolean;
} & ({ value: unknown; reference?: undefined } | { reference: VariableReference; value?: undefined });

export interface VariableWithValues {
  variable: DeploymentVariable;
  values: DeploymentVariableValue[];
}

export class VariableStore {
  constructor(
    private readonly em: EntityManager,
    private readonly secrets: SecretBox,
  ) {}

  /**
   * A literal as stored: sealed as its deployment's when sensitive; the marker `{"sensitive": true}`
   * keeps what is stored.
   */
  private literal(
    owner: { workspaceId: string; deploymentId: string },
    value: unknown,
    sensitive: boolean,
    stored: unknown,
    storedSensitive: boolean,
    path: string,
  ): unknown {
    if (sensitive && isRedactedMarker(value)) {
      if (!storedSensitive || stored === null || stored === undefined) {
        throw new ValidationError('A sensitive value can only be kept if one is stored', [
          { path, message: 'no stored value to keep; send the value itself' },
        ]);
      }
      return stored;
    }
    return storeValue(
      this.secrets.forRecord(owner.workspaceId, 'deployment', owner.deploymentId),
      value,
      sensitive,
    );
  }

  upsertVariable(
    workspaceId: string,
    deploymentId: string,
    id: string,
    input: VariableInput,
  ): Promise<Upserted<DeploymentVariable>> {
    return conflictOnDuplicate(async () => {
      await findOwned(this.em, DeploymentSchema, workspaceId, deploymentId, 'deployment');
      const existing = await this.em.findOne(DeploymentVariableSchema, { id });
      if (existing && existing.workspaceId !== workspaceId)
        throw new NotFoundError('deployment variable', id);
      if (existing && existing.deploymentId !== deploymentId) {
        throw new ConflictError(`Variable ${id} belongs to another deployment`, 'wrong_parent');
      }
      const sensitive = input.sensitive ?? false;
      const fields = {
        key: input.key,
        description: input.description ?? null,
        sensitive,
        defaultValue:
          input.defaultValue === undefined
            ? null
            : this.literal(
                { workspaceId, deploymentId },
                input.defaultValue,
                sensitive,
                existing?.defaultValue,
                existing?.sensitive ?? false,
                'body.defaultValue',
              ),
      };
      const record = existing
        ? this.em.assign(existing, fields)
        : this.em.create(DeploymentVariableSchema, { id, workspaceId, deploymentId, ...fields });
      await this.em.flush();
      return { record, created: !existing };
    }, `The deployment already has a variable with key "${input.key}"`);
  }

  async getVariable(workspaceId: string, id: string, deploymentId?: string): Promise<VariableWithValues> {
    const variable = await findOwned(
      this.em,
      DeploymentVariableSchema,
      workspaceId,
      id,
      'deployment variable',
    );
    if (deploymentId && variable.deploymentId !== deploymentId)
      throw new NotFoundError('deployment variable', id);
    const values = await this.em.find(
      DeploymentVariableValueSchema,
      { variableId: id },
      { orderBy: { priority: 'desc', id: 'asc' } },
    );
    return { variable, values };
  }

  async listVariables(
    workspaceId: string,
    deploymentId: string,
    page: PageRequest,
  ): Promise<Page<VariableWithValues>> {
    await findOwned(this.em, DeploymentSchema, workspaceId, deploymentId, 'deployment');
    const [variables, total] = await this.em.findAndCount(
      DeploymentVariableSchema,
      { deploymentId },
      { orderBy: { key: 'asc' }, limit: page.limit, offset: page.offset },
    );
    const values = await this.em.find(
      DeploymentVariableValueSchema,
      { variableId: variables.map((v) => v.id) },
      { orderBy: { priority: 'desc', id: 'asc' } },
    );
    return {
      items: variables.map((variable) => ({
        variable,
        values: values.filter((v) => v.variableId === variable.id),
      })),
      total,
      limit: page.limit,
      offset: page.offset,
    };
  }

  async deleteVariable(workspaceId: string, id: string, deploymentId?: string): Promise<void> {
    const { variable } = await this.getVariable(workspaceId, id, deploymentId);
    await this.em.remove(variable).flush();
  }

  async upsertValue(
    workspaceId: string,
    variableId: string,
    id: string,
    input: VariableValueInput,
    deploymentId?: string,
  ): Promise<Upserted<DeploymentVariableValue>> {
    const { variable } = await this.getVariable(workspaceId, variableId, deploymentId);
    const existing = await this.em.findOne(DeploymentVariableValueSchema, { id });
    if (existing && existing.workspaceId !== workspaceId)
      throw new NotFoundError('deployment variable value', id);
    if (existing && existing.variableId !== variable.id) {
      throw new ConflictError(`Value ${id} belongs to another variable`, 'wrong_parent');
    }
    const sensitive = input.sensitive ?? variable.sensitive;
    const fields = {
      priority: input.priority,
      resourceSelector: input.resourceSelector ?? null,
      sensitive,
      reference: input.reference ?? null,
      value:
        input.reference !== undefined
          ? null
          : this.literal(
              variable,
              input.value,
              sensitive,
              existing?.value,
              existing?.sensitive ?? false,
              'body.value',
            ),
    };
    const record = existing
      ? this.em.assign(existing, fields)
      : this.em.create(DeploymentVariableValueSchema, {
          id,
          workspaceId,
          variableId: variable.id,
          ...fields,
        });
    await this.em.flush();
    return { record, created: !existing };
  }

  async getValue(workspaceId: string, id: string, variableId?: string): Promise<DeploymentVariableValue> {
    const value = await findOwned(
      this.em,
      DeploymentVariableValueSchema,
      workspaceId,
      id,
      'deployment variable value',
    );
    if (variableId && value.variableId !== variableId)
      throw new NotFoundError('deployment variable value', id);
    return value;
  }

  async deleteValue(workspaceId: string, id: string, variableId?: string): Promise<void> {
    await this.em.remove(await this.getValue(workspaceId, id, variableId)).flush();
  }
}
