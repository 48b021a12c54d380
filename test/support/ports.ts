// The tests take free ports from the same helper the benchmarks use.
export { freePort } from '../../src/launcher/process.js';
