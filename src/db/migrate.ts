/**
 * Runs `migrations/` with Kysely's Migrator. The Migrator reports failures in its result instead
 * of throwing; this module turns them into a {@link MigrationError} naming the migration.
 */
import { readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  Migrator,
  type Migration,
  type MigrationProvider,
  type MigrationResultSet,
} from 'kysely/migration';
import { messageOf } from '../errors.js';
import type { Db } from './index.js';

/** `migrations/` next to `src/` (in the repo) or next to `dist/src/` (in a build). */
export const MIGRATIONS_DIR = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'migrations',
);

const MIGRATION_FILE = /^(?!.*\.d\.ts$).+\.(ts|js|mjs)$/;

export class FolderMigrationProvider implements MigrationProvider {
  constructor(private readonly dir: string = MIGRATIONS_DIR) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(this.dir)).filter((f) => MIGRATION_FILE.test(f)).sort();
    const out: Record<string, Migration> = {};
    for (const f of files) {
      out[f.replace(/\.(ts|js|mjs)$/, '')] = (await import(
        pathToFileURL(join(this.dir, f)).href
      )) as Migration;
    }
    return out;
  }
}

export class MigrationError extends Error {
  constructor(
    message: string,
    readonly results: MigrationResultSet['results'],
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'MigrationError';
  }
}

/**
 * Migrates to the latest version.
 * @returns names of the migrations applied by this call (empty when already current).
 * @throws {@link MigrationError} naming the failed migration and the database's reason.
 */
export async function migrateToLatest(db: Db, dir?: string): Promise<string[]> {
  const migrator = new Migrator({ db, provider: new FolderMigrationProvider(dir) });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new MigrationError(
      `migration ${failed ? `"${failed}" ` : ''}failed: ${messageOf(error)}`,
      results,
      { cause: error },
    );
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
