// The application menu. Its actions are callbacks so main.ts owns all Electron side effects.
import type { MenuItemConstructorOptions } from 'electron';
import { TRACE_EXPORT_FORMATS, type TraceExportFormat } from '../shared/messages.js';

export interface MenuActions {
  openModelFolder(): void;
  openTrace(): void;
  openReportFolder(): void;
  exportTrace(format: TraceExportFormat): void;
  quit(): void;
}

export const EXPORT_FORMAT_LABELS: Record<TraceExportFormat, string> = {
  jsonl: 'JSON Lines (.jsonl)',
  parquet: 'Parquet tables (.parquet)',
  perfetto: 'Perfetto / Chrome trace (.json)',
  csv: 'CSV (.csv)',
};

export function menuTemplate(actions: MenuActions, isMac: boolean): MenuItemConstructorOptions[] {
  const file: MenuItemConstructorOptions = {
    label: 'File',
    submenu: [
      { label: 'Open Model Folder…', accelerator: 'CmdOrCtrl+O', click: () => actions.openModelFolder() },
      { label: 'Open Trace…', accelerator: 'CmdOrCtrl+Shift+O', click: () => actions.openTrace() },
      { label: 'Open Report Folder…', click: () => actions.openReportFolder() },
      {
        label: 'Export Trace',
        submenu: TRACE_EXPORT_FORMATS.map((format) => ({
          label: EXPORT_FORMAT_LABELS[format],
          click: () => actions.exportTrace(format),
        })),
      },
      { type: 'separator' },
      { label: isMac ? 'Quit ECHO Studio' : 'Quit', accelerator: 'CmdOrCtrl+Q', click: () => actions.quit() },
    ],
  };
  const template: MenuItemConstructorOptions[] = [file, { role: 'editMenu' }, { role: 'viewMenu' }, { role: 'windowMenu' }];
  if (isMac) template.unshift({ role: 'appMenu' });
  return template;
}

/** Save-dialog filters for each export format. */
export const EXPORT_FILTERS: Record<TraceExportFormat, { name: string; extensions: string[] }> = {
  jsonl: { name: 'JSON Lines', extensions: ['jsonl'] },
  parquet: { name: 'Parquet', extensions: ['parquet'] },
  perfetto: { name: 'Perfetto trace', extensions: ['json'] },
  csv: { name: 'CSV', extensions: ['csv'] },
};
