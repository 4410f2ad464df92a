#!/usr/bin/env node
// Derives the list of Ctrlplane's REST operations (id, method, path, success status) from its
// OpenAPI document, for the compatibility test. Only these facts are kept, nothing of the
// document's schemas or text.
//   node scripts/ctrlplane-operations.mjs [../shared/reference/ctrlplane-openapi.json]
import fs from 'node:fs';
import path from 'node:path';

const METHODS = ['get', 'put', 'post', 'patch', 'delete'];
const source =
  process.argv[2] ?? path.join(import.meta.dirname, '../../shared/reference/ctrlplane-openapi.json');
const target = path.join(import.meta.dirname, '../test/fixtures/ctrlplane-operations.json');

const document = JSON.parse(fs.readFileSync(source, 'utf8'));
const operations = Object.entries(document.paths).flatMap(([route, item]) =>
  METHODS.filter((method) => item[method]).map((method) => {
    const codes = Object.keys(item[method].responses ?? {}).map(Number);
    return {
      operationId: item[method].operationId,
      method,
      path: route,
      success: Math.min(...codes.filter((code) => code >= 200 && code < 300)),
    };
  }),
);
operations.sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method));
fs.writeFileSync(target, `${JSON.stringify(operations, null, 2)}\n`);
process.stdout.write(`${operations.length} operations written to ${path.relative(process.cwd(), target)}\n`);
