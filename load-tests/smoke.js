// k6 smoke test: the API is up and ready, and both probes stay fast under a little load.
//   k6 run load-tests/smoke.js            (BASE_URL defaults to http://127.0.0.1:3000)
import { check } from 'k6';
import http from 'k6/http';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:3000';

/** @type {import('k6/options').Options} */
export const options = {
  vus: 5,
  duration: __ENV.DURATION || '10s',
  thresholds: {
    checks: ['rate==1'],
    http_req_failed: ['rate==0'],
    'http_req_duration{probe:readyz}': ['p(99)<250'],
  },
};

export default function () {
  const health = http.get(`${BASE_URL}/healthz`, { tags: { probe: 'healthz' } });
  check(health, { 'healthz 200': (r) => r.status === 200 });
  const ready = http.get(`${BASE_URL}/readyz`, { tags: { probe: 'readyz' } });
  check(ready, {
    'readyz 200': (r) => r.status === 200,
    'redis and postgres up': (r) => {
      const body = /** @type {{ checks?: Record<string, string> }} */ (r.json());
      return body.checks?.redis === 'up' && body.checks?.postgres === 'up';
    },
  });
}
