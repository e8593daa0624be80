// The output layer's door: what the engine computed, written as files people open — the
// reproduction study's report (HTML with inline SVG figures, CSV, JSON) and a trace's exports
// (Parquet, Perfetto, CSV), with the atomic file writing they share. It sits above the engine,
// which it reaches only through the engine's door, and below the faces: the hosts and the CLI
// import it from here and from nowhere else (.dependency-cruiser.cjs, `faces-use-the-output-door`).

// The reproduction study's report: data and claims in, name → file contents out.
export { renderReport, type ReportFiles, type ReportMeta, type ServingTarget } from './report/report.js';

// A trace's exports, and writing files without leaving a half-written one where a good one was.
export { checkWritableName, pathTaken, removeQuietly, temporaryPathBeside, traceExportPaths, writeTraceExport } from './trace/export-files.js';
