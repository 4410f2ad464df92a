/** SQL for a version's fields as the gates see them, from the `deployment_version` row `alias`. */
export const VERSION_JSON = (alias: string) =>
  `json_build_object('id', ${alias}.id, 'tag', ${alias}.tag, 'name', ${alias}.name, 'status', ${alias}.status,
     'metadata', ${alias}.metadata, 'config', ${alias}.config, 'createdAt', ${alias}.created_at)`;

/** SQL for the version deployed (or deploying) on the target whose `release_target_state` is `state`. */
export const DEPLOYED_VERSION_JOIN = (state: string, version: string) =>
  `LEFT JOIN release ${version}_release ON ${version}_release.id = coalesce(${state}.active_release_id, ${state}.current_release_id)
   LEFT JOIN deployment_version ${version} ON ${version}.id = ${version}_release.version_id`;
