/**
 * Test support: a TCP proxy on loopback in front of a server, that a test can
 * cut (every connection dropped, new ones refused at once) and restore — a
 * network partition between one broker and the fleet's PostgreSQL, while the
 * server and every other host go on.
 */
import { createServer, connect, type Server, type Socket } from "node:net";

export class CutProxy {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #cut = false;
  port = 0;

  private constructor(target: { host: string; port: number }) {
    this.#server = createServer((client) => {
      if (this.#cut) return void client.destroy();
      const upstream = connect(target.port, target.host);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on("close", () => this.#sockets.delete(s));
        s.on("error", () => {});
      }
      client.pipe(upstream).pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
  }

  static async start(target: { host: string; port: number }): Promise<CutProxy> {
    const proxy = new CutProxy(target);
    await new Promise<void>((resolve) => proxy.#server.listen(0, "127.0.0.1", resolve));
    proxy.port = (proxy.#server.address() as { port: number }).port;
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  through(url: string): string {
    const u = new URL(url);
    u.hostname = "127.0.0.1";
    u.port = String(this.port);
    return u.toString();
  }

  cut(): void {
    this.#cut = true;
    for (const s of this.#sockets) s.destroy();
  }

  restore(): void {
    this.#cut = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
