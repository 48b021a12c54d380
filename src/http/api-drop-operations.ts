/** The operator's routes for a drop (docs/operations.md#running-a-drop), part of api-operations.ts's table. */
import { ADMIN_OR_SESSION, ADMIN_REFUSALS, type Operation } from './api-components.js';

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
        name: 'before',
        in: 'query',
        required: false,
        description: 'entries older than this id (the `next` link pages with it)',
        schema: { type: 'string' },
      },
    ],
    ok: { 200: ['AuditPage', 'newest first'] },
    problems: { 400: 'bad query', ...ADMIN_REFUSALS },
    store: true,
  },
];
