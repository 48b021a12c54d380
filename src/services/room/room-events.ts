/**
 * The room's moments as product events (docs/events.md#a-waiting-rooms-events): a shopper
 * admitted, their admission about to end, passed over once it ran out unused, and those still
 * waiting when the product sold out for good. They ride the
 * feed and the webhooks beside the order events, so a shop's notifier can send its own email or
 * SMS. One subject per shopper's place (`<product>/places/<user>`), so a receiver gets a place's
 * events in the order they happened; an id per shopper, sale and moment, so a tick published
 * again (a takeover) writes nothing twice.
 */
import type { ProductEventInput } from '../../events/index.js';
import type { ProductView, RoomMoments, SoldOutShopper } from '../../inventory/index.js';

export const ROOM_EVENT_SOURCE = '/seckill/rooms';

/** The events of a tick's moments, in the order they happened within it. */
export function roomEventsOf(view: ProductView, moments: RoomMoments): ProductEventInput[] {
  const admittedForMs = (view.room?.settings.admittedForSeconds ?? 0) * 1_000;
  const event = (
    type: 'room.admitted' | 'room.expiring' | 'room.passed-over',
    userId: string,
    data: Record<string, unknown>,
  ): ProductEventInput => ({
    id: `${type}:${view.id}:${view.epoch}:${userId}`,
    productId: view.id,
    type,
    subject: `${view.id}/places/${userId}`,
    data: { productId: view.id, userId, ...data },
  });
  const at = (ms: number) => new Date(ms).toISOString();
  return [
    ...moments.passed.map((u) => event('room.passed-over', u, { passedAt: at(moments.at) })),
    ...moments.admitted.map((u) =>
      event('room.admitted', u, {
        admittedAt: at(moments.at),
        admittedUntil: at(moments.at + admittedForMs),
      }),
    ),
    ...moments.expiring.map((e) =>
      event('room.expiring', e.userId, { admittedUntil: at(e.endsAt) }),
    ),
  ];
}

/**
 * "Sold out while you waited": one event per shopper still waiting when the product sold out for
 * good, with the place they had (`position`, 1: next in line; `ticket`, their number in line).
 * Its id is the shopper's and the sale's, as the other moments': a batch told again after a
 * takeover writes nothing twice.
 */
export function soldOutEventsOf(
  view: ProductView,
  shoppers: SoldOutShopper[],
): ProductEventInput[] {
  const soldOutAt = new Date(view.soldOutAt || Date.now()).toISOString();
  return shoppers.map((s) => ({
    id: `room.sold-out:${view.id}:${view.epoch}:${s.userId}`,
    productId: view.id,
    type: 'room.sold-out',
    subject: `${view.id}/places/${s.userId}`,
    data: {
      productId: view.id,
      userId: s.userId,
      position: s.position,
      ticket: s.ticket,
      soldOutAt,
    },
  }));
}
