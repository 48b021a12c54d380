/**
 * Messages on a product's events channel (sharded pub/sub), how API processes keep each other's
 * catalogue in step:
 *
 *   empty <epoch> <segment>   a segment ran out: skip it
 *   soldout <epoch>           every segment ran out: answer from memory
 *   reseed <epoch>            a new sale: forget what you knew
 *   restock <epoch> <segment> units came back to a segment: it is not empty, nor the sale sold out
 *   admit <epoch> <served> <at ms>  the waiting room admitted every ticket up to <served> (by <at>)
 *   changed <epoch>           an operator changed the sale (paused, resumed, ended it, its room's
 *                             pace, its units): read its meta again
 */
export type ProductEvent =
  | { kind: 'empty'; epoch: number; segment: number }
  | { kind: 'restock'; epoch: number; segment: number }
  | { kind: 'soldout'; epoch: number }
  | { kind: 'reseed'; epoch: number }
  | { kind: 'changed'; epoch: number }
  | { kind: 'admit'; epoch: number; served: number; at: number };

export function encodeEvent(event: ProductEvent): string {
  if (event.kind === 'admit') return `admit ${event.epoch} ${event.served} ${event.at}`;
  return event.kind === 'empty' || event.kind === 'restock'
    ? `${event.kind} ${event.epoch} ${event.segment}`
    : `${event.kind} ${event.epoch}`;
}

/** The event of a message; null for one this version does not know (ignored, not fatal). */
export function decodeEvent(message: string): ProductEvent | null {
  const [kind, epochText, segmentText, atText] = message.split(' ');
  const epoch = Number(epochText);
  if (!Number.isInteger(epoch)) return null;
  if (kind === 'empty' || kind === 'restock') {
    const segment = Number(segmentText);
    return Number.isInteger(segment) ? { kind, epoch, segment } : null;
  }
  if (kind === 'soldout' || kind === 'reseed' || kind === 'changed') return { kind, epoch };
  if (kind === 'admit') {
    const served = Number(segmentText);
    const at = Number(atText);
    return Number.isInteger(served) && Number.isInteger(at) ? { kind, epoch, served, at } : null;
  }
  return null;
}
