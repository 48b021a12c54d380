/**
 * After every test file: each answer its apps made (test/support/answers.ts) is documented with
 * its status in /openapi.json, not only under `default`. Files that start no app check nothing.
 */
import { afterAll, expect } from 'vitest';
import { undocumentedAnswers } from './answers.js';

afterAll(async () => {
  const { openApiDocument } = await import('../../src/http/openapi/document.js');
  const doc = openApiDocument() as Parameters<typeof undocumentedAnswers>[0];
  expect(undocumentedAnswers(doc), 'answers made here that /openapi.json does not list').toEqual(
    [],
  );
});
