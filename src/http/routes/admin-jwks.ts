/**
 * `POST /admin/jwks/refresh` (behind the admin guard; docs/api.md#identity): the identity
 * provider's keys fetched again now by every API process, recorded in the audit log.
 */
import type { IRouter } from 'express';
import { ProblemError } from '../../errors.js';
import type { IdentityKeys } from '../../services/index.js';
import { actorOf } from './admin-audit.js';

export function mountAdminJwks(router: IRouter, deps: { identityKeys?: IdentityKeys | undefined }) {
  router.post('/admin/jwks/refresh', async (req, res) => {
    const actor = actorOf(req);
    if (!deps.identityKeys) {
      throw new ProblemError({
        status: 409,
        code: 'jwks-not-configured',
        title: 'No identity provider keys',
        detail: 'JWT_JWKS_URL is not set: this API verifies no token with published keys',
      });
    }
    res.json(await deps.identityKeys.refresh(actor));
  });
}
