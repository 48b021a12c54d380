/**
 * The dashboard's operations and Bull Board (docs/dashboard.md, docs/admin-access.md), part of
 * operations.ts's table.
 */
import {
  ADMIN_OR_SESSION,
  CROSS_SITE_REFUSAL,
  SESSION_REFUSALS,
  type Operation,
} from './components.js';

export const DASHBOARD_OPERATIONS: Operation[] = [
  {
    method: 'get',
    route: '/admin/dashboard',
    operationId: 'dashboardPage',
    tag: 'dashboard',
    summary: 'The live dashboard (HTML): the login form without a session',
    ok: { 200: ['html', 'the dashboard, or its login form'] },
    problems: CROSS_SITE_REFUSAL,
  },
  {
    method: 'post',
    route: '/admin/dashboard/login',
    operationId: 'dashboardLogin',
    tag: 'dashboard',
    summary:
      'Open an admin session (cookie seckill_admin, path /admin): opens the dashboard and Bull Board',
    body: { schema: 'LoginRequest', required: true },
    ok: { 204: ['empty', 'logged in (Set-Cookie)'] },
    problems: {
      400: 'bad body',
      401: 'wrong admin token',
      ...CROSS_SITE_REFUSAL,
      429: 'too many wrong admin tokens from this address',
    },
    store: true,
  },
  {
    method: 'post',
    route: '/admin/dashboard/logout',
    operationId: 'dashboardLogout',
    tag: 'dashboard',
    summary: 'Close the admin session (revoked at once)',
    ok: { 204: ['empty', 'logged out'] },
    problems: CROSS_SITE_REFUSAL,
    store: true,
  },
  {
    method: 'get',
    route: '/admin/dashboard/stream',
    operationId: 'dashboardStream',
    tag: 'dashboard',
    summary: "The dashboard's live snapshots (server-sent events)",
    security: ADMIN_OR_SESSION,
    ok: {
      200: [
        'event-stream',
        'first `event: history` (the last 2 minutes of rates), then a snapshot every 500 ms',
      ],
    },
    problems: SESSION_REFUSALS,
  },
  {
    method: 'get',
    route: '/admin/queues',
    operationId: 'bullBoard',
    tag: 'dashboard',
    summary: 'Bull Board (HTML) for the order queues; its own pages and API live under it',
    security: ADMIN_OR_SESSION,
    ok: { 200: ['html', 'Bull Board'] },
    problems: SESSION_REFUSALS,
  },
];
