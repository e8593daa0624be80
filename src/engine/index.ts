// The engine as its hosts call it (the CLI's commands, the engine host): a run's setup, the one
// run path, the clocks and profiles that price it, what it reports. Inside the engine, modules
// import each other directly; this is the door from outside.
export { BUNDLED_DRAFT, BUNDLED_TARGET, loadRunSetup, resolveModelDirs, runTraceHeader, type RunSetup } from './session-run.js';
export { runToEnd, startRun, type FinishedRun, type InstrumentedRun, type ModelledTime, type RunOutcome } from './instrumented-run.js';
export type { RequestResult } from './runner.js';
export { availablePolicies, createPolicy, registerPolicy, unknownPolicy } from './policy/index.js';
export type { VerifyCost } from './policy/types.js';
export { clockFromSpec, type DeviceCosts, type ModelledClock } from './cost/clock.js';
export { suggestKmax } from './cost/knee.js';
export { loadHardwareProfile, profileMismatches, type HardwareProfile } from './cost/measure.js';
export { formatStepTime } from './metrics/run-metrics.js';
export { promptText } from './workload.js';
export { TraceRecorder } from './trace/writer.js';
