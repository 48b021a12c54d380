/**
 * The variables of the queue page this service serves (docs/queue-page.md) and of its Web Push
 * of the turn: the shop's checkout, theme, logo and name; the VAPID keys and the push services a
 * subscription may name. Part of env.ts's schema; {@link queuePageConfig} makes their config.
 */
import { z } from 'zod';
import { url } from './urls.js';

/** The browsers' push services (Chrome, Firefox, Safari, Edge): a subscription names one. */
const DEFAULT_PUSH_SERVICE_ORIGINS = [
  'https://fcm.googleapis.com',
  'https://*.push.services.mozilla.com',
  'https://web.push.apple.com',
  'https://*.notify.windows.com',
].join(',');

export const queuePageEnv = {
  QUEUE_PAGE_RETURN_URL: url(['https:', 'http:'], 'https://shop.example/checkout/{productId}')
    .optional()
    .describe(
      "the shop's checkout the queue page sends an admitted shopper to ({productId} filled in, the sale token in the fragment); none: the page's own buy button",
    ),
  QUEUE_PAGE_THEME_CSS: z
    .string()
    .min(1)
    .optional()
    .describe(
      "a CSS file the queue page loads after its own: the shop's colours and fonts (CSS variables)",
    ),
  QUEUE_PAGE_LOGO_URL: url(['https:', 'http:'], 'https://shop.example/logo.svg')
    .optional()
    .describe("the shop's logo at the top of the queue page"),
  QUEUE_PAGE_SHOP_NAME: z
    .string()
    .min(1)
    .max(80)
    .default('seckill')
    .describe("the shop's name on the queue page (its title, the logo's text)"),
  VAPID_PUBLIC_KEY: z
    .string()
    .regex(
      /^[A-Za-z0-9_-]{87}$/,
      'must be a P-256 public key, 65 bytes in base64url (87 characters)',
    )
    .optional()
    .describe('Web Push: the VAPID public key the queue page subscribes with (none: no push)'),
  VAPID_PRIVATE_KEY: z
    .string()
    .regex(
      /^[A-Za-z0-9_-]{43}$/,
      'must be a P-256 private key, 32 bytes in base64url (43 characters)',
    )
    .optional()
    .describe('Web Push: the VAPID private key the turn notices are signed with'),
  PUSH_SERVICE_ORIGINS: z
    .string()
    .regex(
      /^\s*https?:\/\/[^\s,/]+\s*(,\s*https?:\/\/[^\s,/]+\s*)*$/,
      'must be origins, comma-separated (https://host, *. for any subdomain)',
    )
    .default(DEFAULT_PUSH_SERVICE_ORIGINS)
    .describe(
      "push services a shopper's subscription may name (the browsers' own): this service sends them its turn notices",
    ),
  VAPID_SUBJECT: url(['mailto:', 'https:'], 'mailto:ops@shop.example')
    .optional()
    .describe('Web Push: who a push service contacts about this sender (mailto: or https:)'),
};

const queuePageSchema = z.object(queuePageEnv);
type QueuePageEnv = z.output<typeof queuePageSchema>;

export interface QueuePageConfig {
  /** the queue page this service serves for each room product */
  queuePage: {
    /** the shop's checkout, `{productId}` filled in; undefined: the page's buy button */
    returnUrl: string | undefined;
    /** a CSS file the page loads after its own */
    themeCss: string | undefined;
    logoUrl: string | undefined;
    shopName: string;
  };
  /** Web Push (VAPID): undefined without keys, and the page offers no push */
  push:
    | {
        publicKey: string;
        privateKey: string;
        subject: string;
        /** origins a subscription may name (a leading `*.` for any subdomain) */
        serviceOrigins: readonly string[];
      }
    | undefined;
}

export function queuePageConfig(env: QueuePageEnv): QueuePageConfig {
  return {
    queuePage: {
      returnUrl: env.QUEUE_PAGE_RETURN_URL,
      themeCss: env.QUEUE_PAGE_THEME_CSS,
      logoUrl: env.QUEUE_PAGE_LOGO_URL,
      shopName: env.QUEUE_PAGE_SHOP_NAME,
    },
    push:
      env.VAPID_PUBLIC_KEY && env.VAPID_PRIVATE_KEY && env.VAPID_SUBJECT
        ? {
            publicKey: env.VAPID_PUBLIC_KEY,
            privateKey: env.VAPID_PRIVATE_KEY,
            subject: env.VAPID_SUBJECT,
            serviceOrigins: env.PUSH_SERVICE_ORIGINS.split(',').map((o) => o.trim()),
          }
        : undefined,
  };
}
