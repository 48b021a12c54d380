// The tests take free ports from the same helpers the benchmarks use.
export { freePort, freePortRange } from '../../src/launcher/process.js';
