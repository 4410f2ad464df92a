import { defineEntity } from '@mikro-orm/core';

const p = defineEntity.properties;

/** The primary key and owning workspace every workspace-scoped record has. */
export const workspaceScoped = () => ({
  id: p.uuid().primary(),
  workspaceId: p.uuid(),
});

export const createdAt = () => ({ createdAt: p.datetime().onCreate(() => new Date()) });

export const timestamps = () => ({
  ...createdAt(),
  updatedAt: p
    .datetime()
    .onCreate(() => new Date())
    .onUpdate(() => new Date()),
});
