// The web host's two trace routes (docs/architecture.md, "Trace files from a browser"): an upload
// is checked as it arrives and kept in the session folder (web-trace-files.ts), answered with the
// path to trace.open; a download asks the engine host for a trace.export of what the studio shows
// into the session folder, as a client of its own, streams the file back and removes it.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { DOWNLOAD_FORMATS, DOWNLOAD_NAMES, type DownloadFormat, type EngineEvent, type TraceUploadAnswer } from '../shared/messages.js';
import { removeQuietly } from '../output/index.js';
import type { ChannelToEngine } from './port.js';
import { isDownloadFormat, MAX_TRACE_UPLOAD_BYTES, receiveUpload as receiveTraceFile, TraceFileRefusal, uploadName } from './web-trace-files.js';

/** How long a download waits for the engine host's export. */
const EXPORT_TIMEOUT_MS = 120_000;

const DOWNLOAD_TYPES: Record<DownloadFormat, string> = {
  jsonl: 'application/x-ndjson; charset=utf-8',
  perfetto: 'application/json; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
};

export interface TraceRoutes {
  upload(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void>;
  download(res: ServerResponse, url: URL): Promise<void>;
  /** An engine host event for a client id that is an export under way; false when it is none. */
  deliver(to: number, event: EngineEvent): boolean;
  /** The engine host stopped: every export under way fails. */
  engineGone(): void;
}

export function traceRoutes(options: {
  uploadsDir: string;
  downloadsDir: string;
  maxUploadBytes?: number;
  /** A fresh client id for an export's trace.export. */
  newClientId: () => number;
  toEngine: (message: ChannelToEngine) => boolean;
}): TraceRoutes {
  /** Exports under way for downloads, by the client id their trace.export was sent as. */
  const pendingExports = new Map<number, (event: EngineEvent) => void>();
  let uploads = 0;

  /** The engine host's trace.export of what the studio shows, into the session folder; resolves with the file. */
  const exportForDownload = (format: DownloadFormat): Promise<string> =>
    new Promise((resolve, reject) => {
      const id = options.newClientId();
      const file = path.join(options.downloadsDir, `${id}-${DOWNLOAD_NAMES[format]}`);
      const settle = (err: Error | null) => {
        clearTimeout(timer);
        pendingExports.delete(id);
        options.toEngine({ client: id, closed: true });
        if (err) {
          removeQuietly(file);
          reject(err);
        } else resolve(file);
      };
      const timer = setTimeout(() => settle(new TraceFileRefusal(504, 'the engine host did not finish the export in time')), EXPORT_TIMEOUT_MS);
      pendingExports.set(id, (event) => {
        if (event.type === 'progress' && event.task === 'export') settle(null);
        else if (event.type === 'error') settle(new TraceFileRefusal(409, event.message));
      });
      if (!options.toEngine({ client: id, request: { type: 'trace.export', path: file, format } })) settle(new TraceFileRefusal(503, 'the engine host is not running'));
    });

  return {
    /** An upload: checked whole, kept in the session folder, answered with the path to trace.open. */
    async upload(req, res, url) {
      // Only this server's own page may post (the token cookie is same-site already; this says so twice).
      if (req.headers.origin !== `http://${req.headers.host ?? ''}`) throw new TraceFileRefusal(403, `origin ${JSON.stringify(req.headers.origin ?? null)} may not upload`);
      const name = uploadName(url.searchParams.get('name'));
      uploads += 1;
      const { file, steps } = await receiveTraceFile(req, { folder: options.uploadsDir, serial: uploads, name, limit: options.maxUploadBytes ?? MAX_TRACE_UPLOAD_BYTES });
      res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end(JSON.stringify({ path: file, name, steps } satisfies TraceUploadAnswer));
    },
    async download(res, url) {
      const format = url.searchParams.get('format') ?? 'jsonl';
      if (!isDownloadFormat(format)) throw new TraceFileRefusal(400, `format ${JSON.stringify(format)} cannot be downloaded: choose ${DOWNLOAD_FORMATS.join(', ')}`);
      const file = await exportForDownload(format);
      const size = (await stat(file)).size;
      res.writeHead(200, {
        'Content-Type': DOWNLOAD_TYPES[format],
        'Content-Length': String(size),
        'Content-Disposition': `attachment; filename="${DOWNLOAD_NAMES[format]}"`,
        'X-Content-Type-Options': 'nosniff',
        'Cache-Control': 'no-store',
      });
      const stream = createReadStream(file);
      res.on('close', () => {
        stream.destroy();
        removeQuietly(file);
      });
      stream.pipe(res);
    },
    deliver(to, event) {
      const settle = pendingExports.get(to);
      if (!settle) return false;
      settle(event);
      return true;
    },
    engineGone() {
      for (const settle of [...pendingExports.values()]) settle({ type: 'error', message: 'the engine host stopped during the export' });
    },
  };
}
