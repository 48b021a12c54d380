/** The dashboard's read models: what the live page shows, from plain data and the metrics. */
export { DashboardFeed, type DashboardSnapshot } from './feed.js';
export {
  drawPanel,
  fairnessPanel,
  PANEL_REFRESH_MS,
  type DashboardDraw,
  type DashboardFairness,
} from './panels.js';
