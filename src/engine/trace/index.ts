// Trace files: write (TraceRecorder / TraceWriter), read (readTrace, streamTrace, TraceFileIndex),
// and re-score (what-if); exporting one (Parquet, Perfetto, CSV) is src/output/trace's. Format: docs/trace-format.md.
export { buildTraceHeader, describeHardware, describeModel, sha256File, type TraceHeaderInput } from './header.js';
export { TraceRecorder, TraceWriter, type TraceCloseInput, type TraceWriterOptions } from './writer.js';
export {
  TraceCollector,
  TraceFormatError,
  TraceLineParser,
  parseTrace,
  type TraceContents,
  type TraceLineError,
  type TraceRecord,
} from './parse.js';
export { readTrace, readTraceStreaming, streamTrace } from './read.js';
export { TraceFileIndex, TraceLineScan, TraceOpenCancelled, type TraceIndexBuildOptions } from './file-index.js';
export { ExpansionRecorder, treeExpansions } from './expansions.js';
export { rescoreTrace, type WhatIfResult, type WhatIfSettings, type WhatIfStep } from './what-if.js';
