/** The block mapping of tool-result.js, typed for TypeScript callers (the package's tests). */
export type PiContent = { type: "text"; text: string } | { type: "image"; data: string; mimeType: string };
export function piContent(blocks: ReadonlyArray<Record<string, unknown> & { type: string }>): PiContent[];
