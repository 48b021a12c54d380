/**
 * The relay's door: handing the feed's new events on to the endpoints' lanes and asking for
 * their deliveries, on a timer of its own in each worker process. Moves lanes through lanes/'s
 * door; the deliveries it asks for are functions it is given (it knows no delivery/).
 */
export { relay, RELAY_PAGE, STRANDED_AFTER_MS, type RelayDeps } from './relay.js';
export { nextRelayWait, RELAY_IDLE_MS, startRelayLoop, type RelayLoop } from './relay-loop.js';
