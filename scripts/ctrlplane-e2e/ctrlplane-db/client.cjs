// Stands in for Ctrlplane's database client (scripts/ctrlplane-e2e.sh). Some of their API tests
// seed or read rows straight in Ctrlplane's own tables, which Flightdeck does not have: any query
// skips the test that made it, with that reason. A delete is a no-op, since nothing was written.
const { test } = require('@playwright/test');

const reason = "seeds or reads Ctrlplane's own database tables";
const nothing = () =>
  new Proxy(() => nothing(), {
    get: (_, name) => (name === 'then' ? (resolve) => resolve(undefined) : nothing()),
  });

exports.db = new Proxy(
  {},
  { get: (_, name) => (name === 'delete' ? nothing : () => test.skip(true, reason)) },
);
