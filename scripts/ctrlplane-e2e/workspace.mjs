// Creates the workspace and the two API keys their setup project makes in Ctrlplane's web UI,
// through our API with the operator token (docs/getting-started.md, "Workspaces and API keys"),
// and prints their .state/workspace.json (scripts/terraform-acceptance.sh takes its slug and key).
//   FLIGHTDECK_E2E_URL=http://127.0.0.1:8080 FLIGHTDECK_ADMIN_TOKEN=… node workspace.mjs
const origin = process.env.FLIGHTDECK_E2E_URL;
const token = process.env.FLIGHTDECK_ADMIN_TOKEN;

async function post(path, body) {
  const res = await fetch(`${origin}/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 201) throw new Error(`POST /v1${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

const slug = `workspace-${Math.random().toString(36).slice(2, 10)}`;
const workspace = await post('/workspaces', { name: slug, slug });
const secondary = await post(`/admin/workspaces/${workspace.id}/api-keys`, { name: 'secondary' });
process.stdout.write(
  JSON.stringify({
    name: workspace.name,
    slug: workspace.slug,
    id: workspace.id,
    apiKey: workspace.apiKey.key,
    secondaryApiKey: secondary.key,
  }),
);
