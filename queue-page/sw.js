// The queue page's service worker (docs/queue-page.md#web-push): shows the turn's push with the
// page closed, in the words the page handed over at subscribing, and opens the page on a click.
'use strict';

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('push', (event) => {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch {
    data = { body: event.data ? event.data.text() : '' };
  }
  const until = data.until
    ? new Date(data.until).toLocaleTimeString(data.lang || undefined, {
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
      })
    : '';
  const fill = (text) => String(text ?? '').replaceAll('{until}', until);
  event.waitUntil(
    (async () => {
      await self.registration.showNotification(fill(data.title), {
        body: fill(data.body),
        lang: data.lang,
        tag: `seckill-turn:${data.productId}`,
        renotify: true,
        requireInteraction: data.kind === 'admitted',
        data: { url: data.url, kind: data.kind },
      });
      // an open page asks the API at once
      const pages = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
      for (const p of pages) p.postMessage({ type: 'seckill:push', kind: data.kind });
    })(),
  );
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const url = new URL(event.notification.data?.url ?? '/queue/', self.location.origin).href;
  event.waitUntil(
    (async () => {
      const pages = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
      const open = pages.find((p) => p.url.split('#')[0].split('?')[0] === url);
      if (open) return open.focus();
      return self.clients.openWindow(url);
    })(),
  );
});
