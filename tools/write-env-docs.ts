/** Writes .env.example and docs/configuration.md from the config schema (`npm run env:example`). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { configurationPage, envExample } from '../src/config/env-docs.js';

const root = join(import.meta.dirname, '..');
const page = join(root, 'docs', 'configuration.md');
writeFileSync(join(root, '.env.example'), envExample());
const options = (await resolveConfig(page)) ?? {};
writeFileSync(page, await format(configurationPage(), { ...options, filepath: page }));
