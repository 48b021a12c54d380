/** Admission: sale tokens and the rate limits in front of the sale and the room. */
export {
  Admission,
  checked,
  type AdmissionRefusal,
  type LimitedRoute,
  type PendingLimits,
  type RateLimiter,
  type RateState,
} from './admission.js';
export { checkSaleToken, signSaleToken, type SaleTokenClaims } from './sale-token.js';
export {
  ChallengeGate,
  type ChallengeCheck,
  POW_MAX_NUMBER,
  type ChallengeStore,
  type DoorSignals,
  type IssuedChallenge,
  type ProductDoor,
} from './challenge.js';
