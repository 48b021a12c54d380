/**
 * A client generated from /openapi.json with openapi-typescript type-checks against the calls the
 * k6 scripts and the tests make (test/fixtures/typed-client-calls.ts), and a call the API does not
 * take is a type error: the document is one a code generator can use.
 */
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/http/openapi/document.js';
import { tempDir } from '../support/servers.js';

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'typed-client-calls.ts');

async function compile(calls: string): Promise<string[]> {
  const dir = tempDir('api-client');
  try {
    const ast = await openapiTS(openApiDocument() as unknown as Parameters<typeof openapiTS>[0]);
    writeFileSync(join(dir.path, 'api.ts'), astToString(ast));
    const file = join(dir.path, 'calls.ts');
    if (calls === FIXTURE) copyFileSync(FIXTURE, file);
    else writeFileSync(file, calls);
    const program = ts.createProgram([file], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      skipLibCheck: true,
    });
    return ts
      .getPreEmitDiagnostics(program)
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  } finally {
    dir.remove();
  }
}

describe('a client generated from /openapi.json (openapi-typescript)', () => {
  it("type-checks the k6 scripts' and the tests' calls", async () => {
    expect(await compile(FIXTURE)).toEqual([]);
  }, 60_000);

  it('refuses a call the API does not take (a misspelt field, a wrong type)', async () => {
    const errors = await compile(
      `import type { paths } from './api.js';
type Buy = paths['/seckill']['post']['requestBody']['content']['application/json'];
export const a: Buy = { productID: 'p' };
type Seed = paths['/admin/products/{id}']['put']['requestBody']['content']['application/json'];
export const b: Seed = { total: '100', strategy: 'segmented' };
`,
    );
    expect(errors.join('\n')).toMatch(/productID/);
    expect(errors.join('\n')).toMatch(/string.*number|number.*string/);
  }, 60_000);
});
