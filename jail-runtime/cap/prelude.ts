/**
 * The satellite's boot, run before any extension code: the generated entry
 * (`broker/install/entry.ts`) imports this module first, and its top-level
 * await holds back everything after it in the artifact — the SDK, then the
 * extension's own module — until the boot is done.
 *
 * Why first: the Deno flags grant net, read and write on the socket path, and
 * the boot needs them to connect. Any code that ran while they were held could
 * keep them (replace `Deno.permissions.revokeSync`, say) and then unlink, chmod
 * or re-listen on the path. So here, before the extension's module is
 * evaluated: capture the Deno calls the runtime needs (the JavaScript
 * built-ins are captured by `intrinsics.ts`, imported through the runtime),
 * read the boot token from stdin, connect, revoke the three grants and check
 * that Deno now refuses each of them. If any is still held the process exits
 * (code 4) and the extension never runs. The open channel is handed to the
 * serving loop, which says hello once the extension's module has loaded.
 */
import { Channel } from "./channel.js";
import { handOver } from "./runtime.js";
import { U8, logError, utf8Decode } from "./intrinsics.js";

// Captured while nothing else has run; bound, so later patches to Deno's objects do not reach them.
const deno = Deno;
const socketPath: string | undefined = deno.args[0];
const readStdin = deno.stdin.read.bind(deno.stdin);
const exit = deno.exit.bind(deno) as (code: number) => never;
const connect = deno.connect.bind(deno);
const permissions = deno.permissions;
const revokeSync = permissions.revokeSync.bind(permissions);
const querySync = permissions.querySync.bind(permissions);
const requestSync = permissions.requestSync.bind(permissions);

function fail(code: number, message: string): never {
  logError(`tether satellite: ${message}`);
  return exit(code);
}

async function readBootToken(): Promise<string> {
  const buf = new U8(256);
  let text = "";
  while (!text.includes("\n")) {
    const n = await readStdin(buf);
    if (n === null) break;
    text += utf8Decode(buf.subarray(0, n));
  }
  return text.split("\n")[0]!.trim();
}

/**
 * Every grant the command line gave, scoped and unscoped: none may be held.
 * Deno reports a revoked grant as "prompt", which --no-prompt refuses; asking
 * for it again must answer "denied".
 */
function assertRevoked(path: string): void {
  const descriptors: Deno.PermissionDescriptor[] = [
    { name: "net", host: `unix:${path}` },
    { name: "read", path },
    { name: "write", path },
    { name: "net" },
    { name: "read" },
    { name: "write" },
  ];
  for (const descriptor of descriptors) {
    const held = querySync(descriptor).state;
    const asked = requestSync(descriptor).state;
    if (held === "granted" || asked !== "denied") {
      fail(
        4,
        `the ${JSON.stringify(descriptor)} grant is still held after the boot revoked it (query: ${held}, ` +
          `request: ${asked}); the extension is not run`,
      );
    }
  }
}

if (socketPath === undefined) fail(2, "no socket path given");
const boot = await readBootToken();
const conn = await connect({ transport: "unix", path: socketPath });
const link: Deno.Conn = { read: conn.read.bind(conn), write: conn.write.bind(conn), close: conn.close.bind(conn) };
for (const name of ["net", "read", "write"] as const) {
  try {
    revokeSync({ name });
  } catch {
    // checked just below
  }
}
assertRevoked(socketPath);
handOver({ boot, channel: new Channel(link), readStdin, exit });
