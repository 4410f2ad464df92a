// Stands in for Ctrlplane's table definitions (scripts/ctrlplane-e2e.sh): any table, any column.
// An ES module to `import * as schema`, so that its namespace is this proxy itself.
const table = () => new Proxy({}, { get: (_, name) => (name === '__esModule' ? true : table()) });
module.exports = table();
