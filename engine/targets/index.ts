/** Release targets' front door: which deployment × environment × resource triples exist, kept in step with the inventory. */
export {
  lockWorkspaceTargets,
  previewReleaseTargets,
  removeReleaseTargets,
  syncReleaseTargets,
} from './releaseTargetSync';
export {
  deleteOwned,
  lockLive,
  lockProviderSets,
  ownedIdentifiersOutside,
  targetResource,
  upsertRows,
  type ResourceFields,
} from './resourceRows';
