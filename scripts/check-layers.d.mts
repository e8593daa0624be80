export declare function engineFolderCycles(imports: Array<[string, string]>): string[];
export declare function checkLayers(root?: string): Promise<string[]>;
