// The few Deno APIs the capability prelude uses, declared here so the shared
// tsconfig type-checks this folder without Deno's own lib.
declare namespace Deno {
  interface Conn {
    read(p: Uint8Array): Promise<number | null>;
    write(p: Uint8Array): Promise<number>;
    close(): void;
  }
  function connect(options: { transport: "unix"; path: string }): Promise<Conn>;
  const args: string[];
  const stdin: { read(p: Uint8Array): Promise<number | null> };
  const version: { deno: string };
  function exit(code?: number): never;
}
declare namespace Deno {
  type PermissionDescriptor = { name: "read" | "write"; path?: string } | { name: "net"; host?: string };
  const permissions: {
    revokeSync(descriptor: PermissionDescriptor): { state: string };
    querySync(descriptor: PermissionDescriptor): { state: string };
    requestSync(descriptor: PermissionDescriptor): { state: string };
  };
  function addSignalListener(signal: string, handler: () => void): void;
}
