export declare const MAX_FUNCTION_LINES: number;
export declare const LONG_FUNCTIONS: Record<string, number>;
export declare function longFunctions(fileName: string, text: string, max?: number): Array<{ name: string; line: number; lines: number }>;
export declare function checkFunctionLength(root?: string): string[];
