// After `tsc`: the files the compiled broker reads beside its own modules
// (not TypeScript, so tsc does not emit them) are copied into dist/ too.
import { cpSync } from "node:fs";

for (const path of ["broker/console/assets", "broker/jail/seccomp-compile.py", "broker/jail/native"]) {
  cpSync(path, `dist/${path}`, { recursive: true, filter: (src) => !src.endsWith(".ts") });
}
