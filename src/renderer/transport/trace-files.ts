// A browser's trace files, through the web host's HTTP routes (the desktop app uses its menu and
// native dialogs instead): upload a trace from the user's disk, download an export to it. The page
// is served with the access token as a same-site cookie, so these same-origin requests carry it.
import { DOWNLOAD_NAMES, TRACE_DOWNLOAD_ROUTE, TRACE_UPLOAD_ROUTE, type DownloadFormat, type TraceUploadAnswer } from '../../shared/messages.js';

type Fetch = (input: string, init?: RequestInit) => Promise<Response>;

/** The web host's one-line refusal, or the status when it sent none. */
async function refusalOf(response: Response): Promise<string> {
  const text = (await response.text().catch(() => '')).trim().split('\n')[0];
  return text === '' ? `the web host answered ${response.status}` : text;
}

/** Hands the file to the web host, which checks it whole; resolves with the path to open with trace.open. */
export async function uploadTrace(file: File, fetchImpl: Fetch = fetch): Promise<TraceUploadAnswer> {
  const response = await fetchImpl(`.${TRACE_UPLOAD_ROUTE}?name=${encodeURIComponent(file.name)}`, {
    method: 'POST',
    body: file,
    headers: { 'Content-Type': 'application/octet-stream' },
  });
  if (!response.ok) throw new Error(await refusalOf(response));
  return (await response.json()) as TraceUploadAnswer;
}

/** An export of what the studio shows (the live run's recording or the opened trace). */
export async function downloadTrace(format: DownloadFormat, fetchImpl: Fetch = fetch): Promise<Blob> {
  const response = await fetchImpl(`.${TRACE_DOWNLOAD_ROUTE}?format=${format}`);
  if (!response.ok) throw new Error(await refusalOf(response));
  return response.blob();
}

/** Saves a blob to the user's disk the way a browser saves a download (its own dialog or folder). */
export function saveBlob(blob: Blob, format: DownloadFormat, doc: Document = document): void {
  const url = URL.createObjectURL(blob);
  const link = doc.createElement('a');
  link.href = url;
  link.download = DOWNLOAD_NAMES[format];
  link.hidden = true;
  doc.body.append(link);
  link.click();
  link.remove();
  // The download has its own copy once started; a moment later the URL can go.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
