/**
 * A sample producer of product events, for the tests only (the features bring the real ones: a
 * draw's, a waiting room's). Its family is `/seckill/samples`; a note's id is
 * `<type>:<subject>:<n>`, the same each time it is published, so publishing it again (a producer
 * that crashed and starts over) is a no-op. Its types are listed nowhere: the tests register
 * their endpoints for them through the repository, not the API (which takes listed types only).
 */
import type { Db } from '../../src/db/index.js';
import { publishProductEvents, type ProductEventInput } from '../../src/events/index.js';

export const SAMPLE_SOURCE = '/seckill/samples';

/** The `n`th note about `subject`, of `type` (`sample.<what>`). */
export function note(
  productId: string,
  subject: string,
  n: number,
  type = 'sample.noted',
): ProductEventInput {
  return {
    id: `${type}:${subject}:${n}`,
    productId,
    type,
    subject,
    data: { productId, subject, n },
  };
}

/** Publishes the notes in one statement, in `db` (a transaction, or not). @returns how many were new */
export const publishNotes = (db: Db, notes: readonly ProductEventInput[]) =>
  publishProductEvents(db, SAMPLE_SOURCE, notes);
