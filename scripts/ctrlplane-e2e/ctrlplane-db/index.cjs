// Stands in for Ctrlplane's database package (scripts/ctrlplane-e2e.sh): its query builders (eq,
// inArray, …) build nothing, their values only ever reach client.cjs's `db`.
module.exports = new Proxy({}, { get: (_, name) => (name === '__esModule' ? false : () => null) });
