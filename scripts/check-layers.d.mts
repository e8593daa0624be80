export declare const ALLOWED: Record<string, string[]>;
export declare function relativeImports(source: string): string[];
export declare function layerViolations(files: Array<[string, string]>): string[];
export declare function engineCycles(files: Array<[string, string]>): string[];
