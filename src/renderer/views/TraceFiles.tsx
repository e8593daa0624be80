// Open and save traces from a browser (the desktop app has File → Open Trace… and Export Trace):
// an opened file is uploaded to the web host, which checks it and keeps it, then opened with
// trace.open and replayed like any trace; Save downloads an export of what the studio shows.
import { useRef, useState, type ChangeEvent } from 'react';
import { DOWNLOAD_FORMATS, type DownloadFormat, type TraceUploadAnswer } from '../../shared/messages.js';
import { downloadTrace, saveBlob, uploadTrace } from '../transport/trace-files.js';
import { useSend, useStudio } from './StudioContext.js';

const FORMAT_LABELS: Record<DownloadFormat, string> = {
  jsonl: 'trace (.jsonl)',
  perfetto: 'Perfetto (.json)',
  csv: 'CSV (.csv)',
};

export interface TraceFilesProps {
  upload?: (file: File) => Promise<TraceUploadAnswer>;
  download?: (format: DownloadFormat) => Promise<Blob>;
  save?: (blob: Blob, format: DownloadFormat) => void;
}

export function TraceFiles({ upload = uploadTrace, download = downloadTrace, save = saveBlob }: TraceFilesProps) {
  const runState = useStudio((s) => s.runState);
  const reportError = useStudio((s) => s.reportError);
  const send = useSend();
  const input = useRef<HTMLInputElement>(null);
  const [format, setFormat] = useState<DownloadFormat>('jsonl');
  const [busy, setBusy] = useState<'upload' | 'download' | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const live = runState === 'running' || runState === 'paused' || runState === 'loading';

  const open = async (e: ChangeEvent<HTMLInputElement>): Promise<void> => {
    const file = e.target.files?.[0];
    e.target.value = ''; // the same file may be chosen again
    if (!file) return;
    setBusy('upload');
    setNote(null);
    try {
      const answer = await upload(file);
      await send({ type: 'trace.open', path: answer.path });
      setNote(`opened ${answer.name} (${answer.steps} steps)`);
    } catch (err) {
      reportError(`Could not open ${file.name}: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      setBusy(null);
    }
  };

  const saveTrace = async (): Promise<void> => {
    setBusy('download');
    setNote(null);
    try {
      save(await download(format), format);
    } catch (err) {
      reportError(`Could not save the trace: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      setBusy(null);
    }
  };

  return (
    <div className="trace-files" data-testid="trace-files">
      <button type="button" disabled={live || busy !== null} title="open a trace file from this computer and replay it" onClick={() => input.current?.click()}>
        {busy === 'upload' ? 'Opening…' : 'Open trace…'}
      </button>
      <input ref={input} type="file" accept=".jsonl,application/x-ndjson" aria-label="trace file to open" hidden onChange={(e) => void open(e)} />
      <select aria-label="format to save the trace as" value={format} onChange={(e) => setFormat(e.target.value as DownloadFormat)}>
        {DOWNLOAD_FORMATS.map((f) => (
          <option key={f} value={f}>
            {FORMAT_LABELS[f]}
          </option>
        ))}
      </select>
      <button type="button" disabled={runState === 'idle' || busy !== null} title="download the run or the opened trace to this computer" onClick={() => void saveTrace()}>
        {busy === 'download' ? 'Saving…' : 'Save trace'}
      </button>
      {note && (
        <span className="muted trace-files-note" data-testid="trace-files-note">
          {note}
        </span>
      )}
    </div>
  );
}
