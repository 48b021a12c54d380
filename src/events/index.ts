/**
 * Events and their delivery: every change of an order's state is an event written in its
 * transaction (triggers on `orders`), as is each product event a feature publishes
 * (publishProductEvents); both are read back in commit order by the pull feed, and sent to the
 * registered webhook endpoints by BullMQ workers (docs/events.md). The only door of
 * events/ for the layers above; inside, five rooms, each behind its own index.ts: feed/ (the
 * event and its SQL), endpoints/ (registration, receiver rules, secrets), lanes/ (what each
 * endpoint is owed), delivery/ (attempts, sender, jobs, metrics) and relay/ (hand-on).
 */
export * from './feed/index.js';
export * from './endpoints/index.js';
export * from './lanes/index.js';
export * from './delivery/index.js';
export * from './relay/index.js';
export { startEventWorker, type EventWorker, type EventWorkerDeps } from './worker.js';
