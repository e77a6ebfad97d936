// The types of build.js (plain JavaScript, read by the `mailbox` bin before anything can transpile) for TypeScript callers.
export declare const ROOT: string;
export declare const DIST: string;
export declare function hasSources(): boolean;
export declare function buildIsFresh(): boolean;
export declare function build(): Promise<void>;
