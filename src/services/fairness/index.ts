/** A sale's fairness: who tried, the rules that flag, and the report against a fair draw. */
export {
  addressBlock,
  fairnessFigures,
  type Cluster,
  type FairnessFigures,
  type Tried,
} from './figures.js';
export { pmf, quantiles, support, type Hypergeometric } from './hypergeometric.js';
export {
  defaultRules,
  FAIRNESS_RULES,
  flaggedBy,
  rulesHash,
  rulesText,
  type FairnessRule,
  type FairnessRules,
  type Noted,
  type RuleSettings,
} from './rules.js';
export {
  FairnessNotes,
  FLUSH_MS,
  type DoorAnswer,
  type FairnessStore,
  type TriedAt,
} from './notes.js';
export { FairnessReports, type FairnessReport, type UnitsByBuyer } from './report.js';
export {
  EVENT_CLUSTERS,
  FAIRNESS_EVENT_SOURCE,
  fairnessEvent,
  publishFinalReports,
  type FinalReportDeps,
} from './final-reports.js';
