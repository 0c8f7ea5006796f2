/** Packages the command's bundle leaves out, loaded from node_modules/ (bundle-cli.mjs). */
export declare const EXTERNAL: readonly string[];
/** Builds dist/cli/ from dist/broker/ (tsc first). */
export declare function bundleCli(): Promise<void>;
