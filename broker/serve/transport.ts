/**
 * Where `tether serve` listens: a Unix socket (mode 0600; refused when something
 * already listens there, replaced when it is a stale file left by a dead server)
 * or a TCP port on 127.0.0.1 only.
 */
import { chmodSync, lstatSync, unlinkSync } from "node:fs";
import type { Server } from "node:http";
import { connect, type AddressInfo } from "node:net";

export type Where = { readonly socket: string } | { readonly port: number };

/** Why the server cannot listen where it was asked; the message says why. */
export class ListenError extends Error {}

/** Resolves true when a server accepts connections on `path`. */
function somethingListens(path: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const probe = connect(path);
    probe.once("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.once("error", (err: NodeJS.ErrnoException) => {
      probe.destroy();
      if (err.code === "ECONNREFUSED" || err.code === "ENOENT") resolve(false);
      else reject(new ListenError(`Cannot check the socket ${path}: ${err.message}`));
    });
  });
}

/** Makes `path` free for a new socket: refuses a live one or a non-socket file, removes a stale socket. */
async function clearSocketPath(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw err;
  }
  if (!isSocket)
    throw new ListenError(
      `${path} exists and is not a socket; refusing to replace it (choose another path with --socket)`,
    );
  if (await somethingListens(path))
    throw new ListenError(`Something is already listening on ${path} (another tether serve?); refusing to start`);
  unlinkSync(path); // stale: its server died without removing it
}

export interface Listening {
  /** What a client connects to: `ws+unix:<path>` or `ws://127.0.0.1:<port>` (`http…` for a pages listener). */
  readonly url: string;
  /** The socket file, with its inode (so shutdown removes only its own file). */
  readonly socket: { readonly path: string; readonly ino: number } | null;
}

/** Starts `server` listening at `where`. */
export async function listen(server: Server, where: Where, scheme: "ws" | "http" = "ws"): Promise<Listening> {
  if ("socket" in where) {
    const path = where.socket;
    await clearSocketPath(path);
    // The socket file is created by bind(): the umask makes it 0600 from the start, chmod makes sure.
    const previous = process.umask(0o177);
    try {
      await listening(server, () => server.listen(path));
    } finally {
      process.umask(previous);
    }
    chmodSync(path, 0o600);
    return { url: `${scheme}+unix:${path}`, socket: { path, ino: lstatSync(path).ino } };
  }
  await listening(server, () => server.listen(where.port, "127.0.0.1"));
  const address = server.address() as AddressInfo;
  return { url: `${scheme}://127.0.0.1:${address.port}`, socket: null };
}

/** Where extension pages listen by default: another free port beside a port, `<name>-pages.sock` beside a socket. */
export function pagesWhereFor(where: Where): Where {
  if ("port" in where) return { port: 0 };
  return { socket: where.socket.replace(/(\.sock)?$/, "-pages.sock") };
}

function listening(server: Server, start: () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off("listening", onListening);
      reject(
        new ListenError(err.code === "EADDRINUSE" ? `The address is already in use (${err.message})` : err.message),
      );
    };
    const onListening = () => {
      server.off("error", onError);
      resolve();
    };
    server.once("error", onError);
    server.once("listening", onListening);
    start();
  });
}

/** Removes the socket file if it is still the one this server created. */
export function removeSocket(socket: Listening["socket"]): void {
  if (socket === null) return;
  try {
    const st = lstatSync(socket.path);
    if (st.isSocket() && st.ino === socket.ino) unlinkSync(socket.path);
  } catch {
    // Already gone (libuv unlinks a pipe's file when the server closes).
  }
}
