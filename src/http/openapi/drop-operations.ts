/** The operator's routes for a drop (docs/operations.md#running-a-drop), part of operations.ts's table. */
import {
  ADMIN_OR_SESSION,
  ADMIN_REFUSALS,
  idParam,
  OPERATOR_HEADER as operator,
  type Operation,
} from './components.js';

const product = idParam('id', 'product id');

/** A reseed's query parameter (PUT /admin/products/:id): what it may throw away. */
export const DISCARD = {
  name: 'discard',
  in: 'query',
  required: false,
  description:
    "what a reseed may throw away: line (the room's places), purchase-counts (kept by default: a shopper's purchases count against the limit across epochs)",
  schema: { type: 'string', examples: ['line', 'line,purchase-counts'] },
};

/** What every control answers besides its own. */
const CONTROL_PROBLEMS = {
  400: 'bad id or X-Operator',
  ...ADMIN_REFUSALS,
  404: 'unknown product',
  409: 'the sale is over, or was reseeded meanwhile',
  503: 'another control of this product is running (Retry-After)',
} as const;

const control = (
  action: 'pause' | 'resume' | 'end',
  operationId: string,
  summary: string,
): Operation => ({
  method: 'post',
  route: `/admin/products/:id/${action}`,
  operationId,
  tag: 'admin',
  summary,
  security: ADMIN_OR_SESSION,
  parameters: [product, operator],
  ok: { 200: ['DropResult', 'done (changed: false when it already was so)'] },
  problems: CONTROL_PROBLEMS,
  store: true,
});

export const DROP_OPERATIONS: Operation[] = [
  {
    method: 'get',
    route: '/admin/audit',
    operationId: 'getAudit',
    tag: 'admin',
    summary: "The operators' audit log: every change, who made it, when and what it did",
    security: ADMIN_OR_SESSION,
    parameters: [
      { name: 'productId', in: 'query', required: false, schema: { type: 'string' } },
      {
        name: 'limit',
        in: 'query',
        required: false,
        schema: { type: 'integer', minimum: 1, maximum: 500, default: 100 },
      },
      {
        name: 'after',
        in: 'query',
        required: false,
        description: "the page before's `next` (an opaque cursor): the entries older than it",
        schema: { type: 'string' },
      },
      {
        name: 'before',
        in: 'query',
        required: false,
        deprecated: true,
        description:
          '`after` under its 0.2.0 name, accepted until the next release; not with `after`',
        schema: { type: 'string' },
      },
    ],
    ok: { 200: ['AuditPage', 'newest first', ['Link']] },
    problems: { 400: 'bad query', ...ADMIN_REFUSALS },
    store: true,
  },
  control(
    'pause',
    'pauseSale',
    'Pause the sale: purchases refused (503 sale-paused), the room admits nobody, the line kept',
  ),
  control('resume', 'resumeSale', 'Resume a paused sale'),
  control('end', 'endSale', 'End the sale now: ended to everyone; unpaid orders keep their window'),
  {
    method: 'post',
    route: '/admin/products/:id/units',
    operationId: 'changeUnits',
    tag: 'admin',
    summary: 'Put units on sale ({add}) or take unsold ones off ({withdraw}), in the same sale',
    security: ADMIN_OR_SESSION,
    parameters: [product, operator],
    body: { schema: 'UnitsRequest', required: true },
    ok: { 200: ['DropResult', 'done: `units` says how many'] },
    problems: {
      ...CONTROL_PROBLEMS,
      409: 'the sale is over, reseeded meanwhile, or fewer unsold units than asked to withdraw',
    },
    store: true,
  },
  {
    method: 'patch',
    route: '/admin/products/:id/waiting-room',
    operationId: 'paceWaitingRoom',
    tag: 'admin',
    summary: "Change the waiting room's pace and bound on admitted shoppers, from its next tick",
    security: ADMIN_OR_SESSION,
    parameters: [product, operator],
    body: { schema: 'PaceRequest', required: true },
    ok: { 200: ['DropResult', 'done: `waitingRoom` holds the settings now'] },
    problems: {
      ...CONTROL_PROBLEMS,
      409: 'the sale is over, reseeded meanwhile, or the product has no waiting room',
    },
    store: true,
  },
];
