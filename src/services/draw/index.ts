/** The draw's shopper and public side (docs/draw.md): entries, an entry's view, the transcript. */
export { DrawEntries, type DrawEntriesDeps, type EntryAnswer } from './entries.js';
export {
  EntryViews,
  type EntryState,
  type EntryView,
  type EntryViewAnswer,
  type EntryViewsDeps,
} from './entry-view.js';
export {
  Transcripts,
  type DrawState,
  type Transcript,
  type TranscriptAnswer,
  type TranscriptsDeps,
} from './transcript.js';
export type {
  DrawEntryStore,
  DrawRecordSource,
  DrawRecordView,
  EnterAnswer,
  FrozenEntryView,
} from './ports.js';
