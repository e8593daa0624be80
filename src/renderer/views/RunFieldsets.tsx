// The Run panel's pieces below its policy and budget: the model pair, the prompts, requests and
// sampling, and the run's buttons. Each edits the one form RunPanel holds (RunPanel.tsx).
import type { ReactNode } from 'react';
import { WEIGHT_PRECISIONS, type WeightPrecision } from '../../shared/config.js';
import type { BundledModel, RunState } from '../../shared/messages.js';
import type { FieldErrors, RunForm } from './RunPanel.js';
import { useSend } from './StudioContext.js';

/** A text or number input bound to one field of the form (RunPanel's `input`). */
export type FormInput = (key: keyof RunForm, props?: { type?: string; step?: string; knob?: boolean; max?: number }) => ReactNode;

/** What every fieldset of the form reads and writes. */
interface FormParts {
  form: RunForm;
  set: <K extends keyof RunForm>(key: K, value: RunForm[K]) => void;
  errors: FieldErrors;
  input: FormInput;
  live: boolean;
}

const TARGET_PRECISION_LABELS: Record<WeightPrecision, string> = {
  float32: 'float32 (as on disk)',
  int8: 'int8 weight-only (lossless with respect to the int8 target)',
  int4: 'int4 weight-only (lossless with respect to the int4 target)',
};

export function Field({ label, error, children, htmlFor }: { label: string; error?: string; children: ReactNode; htmlFor: string }) {
  return (
    <div className={`field${error ? ' invalid' : ''}`}>
      <label htmlFor={htmlFor}>{label}</label>
      {children}
      {error && (
        <span className="field-error" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}

/** Which pair runs: the bundled one, the bundled target with its demo head, or chosen folders; the target's weights, the draft's window. */
export function ModelPairFieldset({ form, set, errors, input, live, bundled, pickFolder }: FormParts & { bundled: readonly BundledModel[]; pickFolder: ((key: 'draftDir' | 'targetDir') => Promise<void>) | null }) {
  return (
    <fieldset disabled={live}>
      <legend>Model pair</legend>
      <label className="inline">
        <input type="radio" name="modelSource" checked={form.modelSource === 'bundled'} onChange={() => set('modelSource', 'bundled')} />
        bundled demo pair{bundled.length > 0 ? ` (${bundled.map((m) => m.name).join(', ')})` : ''}
      </label>
      {bundled.some((m) => m.name === 'echo-demo-head') && (
        <label className="inline">
          <input type="radio" name="modelSource" checked={form.modelSource === 'bundled-head'} onChange={() => set('modelSource', 'bundled-head')} />
          bundled target with its demo EAGLE-3 head as the draft
        </label>
      )}
      <label className="inline">
        <input type="radio" name="modelSource" checked={form.modelSource === 'folders'} onChange={() => set('modelSource', 'folders')} />
        Hugging Face folders
      </label>
      {form.modelSource === 'folders' && (
        <>
          <Field label="draft folder (a model, or an EAGLE-3 head)" htmlFor="run-draftDir" error={errors.draftDir}>
            {input('draftDir')}
            {pickFolder && (
              <button type="button" onClick={() => void pickFolder('draftDir')}>
                Choose…
              </button>
            )}
          </Field>
          <Field label="target folder" htmlFor="run-targetDir" error={errors.targetDir}>
            {input('targetDir')}
            {pickFolder && (
              <button type="button" onClick={() => void pickFolder('targetDir')}>
                Choose…
              </button>
            )}
          </Field>
        </>
      )}
      <Field label="target weights" htmlFor="run-targetPrecision" error={errors.targetPrecision}>
        <select id="run-targetPrecision" value={form.targetPrecision} onChange={(e) => set('targetPrecision', e.target.value as WeightPrecision)}>
          {WEIGHT_PRECISIONS.map((precision) => (
            <option key={precision} value={precision}>
              {TARGET_PRECISION_LABELS[precision]}
            </option>
          ))}
        </select>
      </Field>
      {form.policy !== 'ar' && (
        <Field label="draft attention window (sink:recent rows; empty: the whole past)" htmlFor="run-draftWindow" error={errors.draftWindow}>
          {input('draftWindow')}
        </Field>
      )}
    </fieldset>
  );
}

/** Where the prompts come from: a bundled domain or a prompts file. */
export function PromptsFieldset({ form, set, errors, input, live, domains }: FormParts & { domains: readonly string[] }) {
  return (
    <fieldset disabled={live}>
      <legend>Prompts</legend>
      <label className="inline">
        <input type="radio" name="promptSource" checked={form.promptSource === 'domain'} onChange={() => set('promptSource', 'domain')} />
        bundled domain
      </label>
      <label className="inline">
        <input type="radio" name="promptSource" checked={form.promptSource === 'file'} onChange={() => set('promptSource', 'file')} />
        prompts file
      </label>
      {form.promptSource === 'domain' ? (
        <Field label="domain" htmlFor="run-domain" error={errors.domain}>
          <select id="run-domain" value={form.domain} onChange={(e) => set('domain', e.target.value)}>
            {domains.map((d) => (
              <option key={d} value={d}>
                {d}
              </option>
            ))}
          </select>
        </Field>
      ) : (
        <Field label="prompts file (one prompt per line, or JSONL)" htmlFor="run-promptsFile" error={errors.promptsFile}>
          {input('promptsFile')}
        </Field>
      )}
    </fieldset>
  );
}

/** How many requests, how long, how sampled. */
export function SamplingFieldset({ errors, input, live }: Pick<FormParts, 'errors' | 'input' | 'live'>) {
  return (
    <fieldset disabled={live}>
      <legend>Requests and sampling</legend>
      <div className="field-row">
        <Field label="temperature" htmlFor="run-temperature" error={errors.temperature}>
          {input('temperature', { type: 'number', step: '0.1' })}
        </Field>
        <Field label="max new tokens" htmlFor="run-maxNewTokens" error={errors.maxNewTokens}>
          {input('maxNewTokens', { type: 'number' })}
        </Field>
      </div>
      <div className="field-row">
        <Field label="requests" htmlFor="run-requests" error={errors.requests}>
          {input('requests', { type: 'number' })}
        </Field>
        <Field label="seed" htmlFor="run-seed" error={errors.seed}>
          {input('seed', { type: 'number' })}
        </Field>
      </div>
    </fieldset>
  );
}

/** Start, pause or resume, one step, stop, and a live run's Apply knobs. */
export function RunButtons({ runState, live, applyKnobs }: { runState: RunState; live: boolean; applyKnobs: () => void }) {
  const send = useSend();
  return (
    <div className="run-buttons">
      <button type="submit" disabled={live}>
        Start
      </button>
      {runState === 'paused' ? (
        <button type="button" onClick={() => send({ type: 'run.resume' })}>
          Resume
        </button>
      ) : (
        <button type="button" disabled={runState !== 'running'} onClick={() => send({ type: 'run.pause' })}>
          Pause
        </button>
      )}
      <button type="button" disabled={runState !== 'paused'} onClick={() => send({ type: 'run.step' })}>
        One step
      </button>
      <button type="button" disabled={!live} onClick={() => send({ type: 'run.stop' })}>
        Stop
      </button>
      {live && (
        <button type="button" onClick={applyKnobs}>
          Apply knobs
        </button>
      )}
    </div>
  );
}
