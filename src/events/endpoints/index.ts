/**
 * The endpoints' door: registration and status (their SQL), the rules a receiver URL must follow,
 * and the signatures each delivery carries. Knows the feed's event types, nothing else of events/.
 */
export {
  EndpointsRepository,
  type Endpoint,
  type EndpointBacklog,
} from './endpoints-repository.js';
export {
  addressRefusal,
  checkLiteralHost,
  checkReceiverHost,
  checkReceiverUrl,
  guardedLookup,
  isPrivateAddress,
  ReceiverRefused,
  type ReceiverRules,
} from './receiver-policy.js';
export {
  ReceiverNames,
  receiverNames,
  type ReceiverNamesOptions,
  type ResolvedAddress,
} from './receiver-names.js';
export { newSecret, signDelivery } from './signing.js';
