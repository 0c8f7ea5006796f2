/**
 * One satellite process, from spawn to death: boot and the hello handshake,
 * invocations with a fresh token each (several open at once when its slot
 * allows), their deadlines, and the shutdown ladder (stdin EOF → SIGTERM →
 * SIGKILL).
 *
 * States: booting → ready ⇄ busy → draining → dead (see docs/satellite.md).
 */
import { chownSync, rmSync, unlinkSync } from "node:fs";
import type { Server, Socket } from "node:net";
import { join } from "node:path";
import { DEFAULT_MAX_FRAME_BYTES } from "../../jail-runtime/wire/codec.js";
import type { Cap, Hello, SatelliteFrame, WireError } from "../../jail-runtime/wire/frames.js";
import { type AnyKind, kindOnWire } from "../../jail-runtime/wire/kinds.js";
import type { CapHandler, CapRefusalObserver } from "../base/capability.js";
import { BrokerCode, TetherError, WireCode } from "../base/errors.js";
import type { InvocationRequest } from "../base/invocation.js";
import type { Logger } from "../base/log.js";
import { failure, type InvocationOutcome } from "../base/outcome.js";
import { createSatelliteCgroup, satelliteLimits, type SatelliteCgroup } from "../jail/cgroup.js";
import { jailIdentity, makeSatelliteDir, type JailIdentity } from "../jail/identity.js";
import { type JailedChild, spawnJailed } from "../jail/spawn.js";
import { checkAnswer } from "./answer.js";
import { bootRace, listenForOne, satelliteLaunch } from "./boot.js";
import type { SatelliteConnection } from "./connection.js";
import { cgroupOomReason, meterIdleCpu, watchMemoryBound, type Bound } from "./bounds.js";
import type { IdleCpuMeter } from "./cpu-watch.js";
import { checkServed, describeExit } from "./handshake.js";
import { awaitHello } from "./hello.js";
import { walkShutdownLadder } from "./ladder.js";
import { captureOutput, type OutputTail } from "./output.js";
import type { OpenInvocation as Open, RunningInvocation, SatelliteSpec, SatelliteState } from "./spec.js";
import { mintToken, tokensEqual } from "./tokens.js";

/** Capability calls with no open invocation's token a satellite may make in its life before it is replaced. */
export const STRAY_CAP_ALLOWANCE = 16;
/**
 * Capability calls of one invocation being served at once, and the characters of their arguments:
 * each holds its arguments (up to a frame) and whatever it waits on (a fetch permit, a session's hook)
 * until it settles. Past either bound a call is refused `busy` at once, unserved (one call alone is
 * always served); the satellite may call again when an answer comes back. A read's frames are all
 * handed on before any answer settles, so the count is not small: fire-and-forget logs come in bursts.
 */
export const MAX_CAPS_IN_FLIGHT = 1024;
export const MAX_CAP_ARGS_IN_FLIGHT = 32 * 1024 * 1024;

export class SatelliteProcess {
  readonly spec: SatelliteSpec;
  readonly #log: Logger;
  /** Who the jail runs as: with no OS sandbox, Deno reads the artifact from the host as the broker. */
  readonly #identity: JailIdentity | null;
  #state: SatelliteState = "booting";
  #child: JailedChild | null = null;
  #conn: SatelliteConnection | null = null;
  #server: Server | null = null;
  #dir: string | null = null;
  /** The invocations open now, by wire id and by token (a capability call names its invocation by token). */
  readonly #open = new Map<number, Open>();
  readonly #openByToken = new Map<string, Open>();
  #nextId = 1;
  #stderr: OutputTail | null = null;
  #exited: Promise<void> = Promise.resolve();
  #deathReason = "";
  #closing: Promise<void> | null = null;
  #stopWatch: () => void = () => {};
  #idleMeter: IdleCpuMeter | null = null;
  /** Capability calls refused for their token so far (see STRAY_CAP_ALLOWANCE). */
  #strayCaps = 0;
  #cgroup: SatelliteCgroup | null = null;
  #observeRefusal: CapRefusalObserver = () => {};
  /** Why the connection ended after the hello but before the boot finished (frames coalesced with the hello). */
  #lostAtBoot: Error | null = null;
  readonly #deathListeners: Array<(reason: string) => void> = [];
  /** Set once the hello proved the boot token and the served set. */
  hello: Hello | null = null;
  pid: number | undefined;

  private constructor(spec: SatelliteSpec) {
    this.spec = spec;
    this.#log = spec.log.child({ satellite: spec.name });
    this.#identity = spec.sandbox === "bwrap" ? jailIdentity(spec.jail?.identity) : null;
  }

  get state(): SatelliteState {
    return this.#state;
  }

  /** The host directory that held this satellite's socket (for diagnostics and the escape suite). */
  get socketDir(): string | null {
    return this.#dir;
  }

  /** Registers a callback for when the process dies, with the reason. */
  onDeath(listener: (reason: string) => void): void {
    if (this.#state === "dead") listener(this.#deathReason);
    else this.#deathListeners.push(listener);
  }

  /** Registers the observer told about capability calls refused for their token. */
  observeRefusals(observer: CapRefusalObserver): void {
    this.#observeRefusal = observer;
  }

  /** Spawns a satellite and waits for a valid hello. Rejects with a TetherError naming what failed. */
  static async boot(spec: SatelliteSpec): Promise<SatelliteProcess> {
    const sat = new SatelliteProcess(spec);
    try {
      await sat.#boot();
    } catch (err) {
      // At info: the caller says it where it matters (a session's status); the extension's log keeps it.
      sat.#log.info("satellite failed to start", { reason: (err as Error).message });
      await sat.destroy((err as Error).message);
      throw err;
    }
    return sat;
  }

  async #boot(): Promise<void> {
    const spec = this.spec;
    // First, so a warm-up boot (once per artifact) is not counted against this boot's time.
    const denoCache = typeof spec.denoCache === "function" ? await spec.denoCache() : (spec.denoCache ?? null);
    const dir = makeSatelliteDir(this.#identity);
    // Hard bounds where the host offers a cgroup: the launcher joins it before bwrap starts.
    this.#cgroup = createSatelliteCgroup(spec.name, satelliteLimits(spec.memoryMb), spec.jail?.cgroup);
    this.#dir = dir;
    const socketPath = join(dir, "s.sock");
    const bootToken = mintToken();

    const { server, connected, listening } = listenForOne(socketPath);
    this.#server = server;
    await listening;
    // Connecting takes write permission on the socket: the jail's uid gets it, nobody else.
    if (this.#identity !== null) chownSync(socketPath, this.#identity.uid, this.#identity.gid);

    const launch = satelliteLaunch(spec, dir, denoCache, this.#identity, this.#cgroup?.procsFiles ?? []);
    // Its own process group: a Ctrl-C or a group-wide signal to the broker (systemd's
    // default kill mode) must not kill satellites mid-call; the broker's shutdown ladder
    // stops them. If the broker dies, bwrap's --die-with-parent and stdin EOF still do.
    const child = spawnJailed(launch, { detached: true });
    this.#child = child;
    this.pid = child.pid;
    if (child.pid !== undefined)
      this.#stopWatch = watchMemoryBound(child.pid, spec.memoryMb, this.#log, (bound, reason) =>
        this.#stopForBound(bound, reason),
      );
    captureOutput(child.stdout, "stdout", this.#log);
    this.#stderr = captureOutput(child.stderr, "stderr", this.#log);
    child.stdin?.on("error", () => {});
    child.stdin?.write(`${bootToken}\n`);
    this.#exited = child.exited.then(
      (r) =>
        this.#onExit(
          this.#cgroup?.oomKilled() === true ? this.#cgroupOom() : describeExit(r.exitCode, r.signal, spec.memoryMb),
        ),
      (err: Error) => this.#onExit(`could not run: ${err.message}`),
    );

    const { exitedEarly, timedOut, clear } = bootRace(
      this.#exited,
      spec.bootTimeoutMs,
      () =>
        new TetherError(
          BrokerCode.bootFailed,
          `Satellite '${spec.name}' ${this.#deathReason} before saying hello${this.#stderrNote()}`,
        ),
      () =>
        new TetherError(
          BrokerCode.bootFailed,
          `Satellite '${spec.name}' did not say hello within ${spec.bootTimeoutMs} ms${this.#stderrNote()}`,
        ),
    );
    try {
      const socket = await Promise.race([connected, exitedEarly, timedOut]);
      const hello = await Promise.race([this.#awaitHello(socket), exitedEarly, timedOut]);
      if (!tokensEqual(hello.boot, bootToken)) {
        throw new TetherError(BrokerCode.bootTokenMismatch, `Satellite '${spec.name}' presented a wrong boot token`);
      }
      // Proven: nobody else may ever connect or be connected to here.
      try {
        unlinkSync(socketPath);
      } catch {
        // the satellite may have removed it itself; nothing listens there either way
      }
      checkServed(spec.name, spec.declared, hello);
      if (this.#state === "dead") {
        // It broke the protocol (or hung up) in the bytes right after its hello, and
        // was killed for it: it must not become ready.
        const lost = this.#lostAtBoot;
        throw lost instanceof TetherError
          ? lost
          : new TetherError(BrokerCode.bootFailed, `Satellite '${spec.name}' ${this.#deathReason} before it was ready`);
      }
      this.hello = hello;
      this.#state = "ready";
      this.#startIdleMeter();
      this.#log.debug("satellite ready", { pid: this.pid });
    } finally {
      clear();
    }
  }

  /** The kernel killed something in its cgroup for passing the memory bound (heap, buffers and tmpfs together). */
  #cgroupOom(): string {
    const reason = cgroupOomReason(this.spec.memoryMb);
    this.spec.onBoundStop?.("memory", reason);
    return reason;
  }

  #stderrNote(): string {
    const tail = this.#stderr?.tail().trim();
    return tail ? `; its stderr ended with: ${tail.slice(-1000)}` : "";
  }

  #awaitHello(socket: Socket): Promise<Hello> {
    const { conn, hello } = awaitHello(
      socket,
      this.spec.name,
      this.spec.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
      {
        frame: (frame) => this.#onFrame(frame),
        closed: (err) => {
          if (this.#state === "booting") this.#lostAtBoot = err;
          this.#onDisconnect(err);
        },
      },
      this.spec.beforeSend,
    );
    this.#conn = conn;
    return hello;
  }

  /** Runs one invocation beside any already open (the slot decides how many may be). */
  run<K extends AnyKind>(req: InvocationRequest<K>, onCap: CapHandler): RunningInvocation<K> {
    if ((this.#state !== "ready" && this.#state !== "busy") || this.#conn === null) {
      throw new TetherError(BrokerCode.closed, `Satellite '${this.spec.name}' is ${this.#state}, not ready`);
    }
    const id = this.#nextId++;
    const token = mintToken();
    let resolveOutcome!: (o: InvocationOutcome<K>) => void;
    let resolveSettled!: () => void;
    const outcome = new Promise<InvocationOutcome<K>>((r) => (resolveOutcome = r));
    const settled = new Promise<void>((r) => (resolveSettled = r));
    const open: Open = {
      id,
      token,
      kind: req.kind,
      name: req.name,
      onCap,
      answered: false,
      settled,
      resolveOutcome: (o) => {
        if (open.answered) return;
        open.answered = true;
        // An open invocation is settled only by a failure or by checkAnswer for its own kind.
        resolveOutcome(o as InvocationOutcome<K>);
      },
      resolveSettled,
      timer: setTimeout(() => this.#onDeadline(open, req.deadlineMs), req.deadlineMs + this.spec.graceMs),
      capsInFlight: 0,
      capArgsInFlight: 0,
    };
    this.#open.set(id, open);
    this.#openByToken.set(token, open);
    if (this.#state === "ready") {
      this.#state = "busy";
      this.#idleMeter?.opened();
    }
    this.#conn.send({
      t: "call",
      id,
      token,
      kind: kindOnWire(req.kind),
      name: req.name,
      args: req.args,
      strand: req.strand,
      deadline_ms: req.deadlineMs,
    });
    return {
      id,
      outcome,
      settled,
      cancel: (reason = "Cancelled by the caller", code = WireCode.cancelled) => {
        if (this.#open.get(id) !== open || open.answered) return;
        // The token dies with the caller's interest: no capability after this.
        open.resolveOutcome(failure(code, reason));
        this.#conn?.send({ t: "cancel", id });
      },
    };
  }

  #finishOpen(open: Open, outcome: InvocationOutcome): void {
    if (this.#open.get(open.id) !== open) return;
    clearTimeout(open.timer);
    this.#open.delete(open.id);
    this.#openByToken.delete(open.token);
    open.resolveOutcome(outcome);
    open.resolveSettled();
    if (this.#state === "busy" && this.#open.size === 0) {
      this.#state = "ready";
      this.#idleMeter?.closed();
    }
  }

  /** From now on, CPU it spends with no invocation open counts against its idle budget. */
  #startIdleMeter(): void {
    const pid = this.pid;
    if (pid === undefined) return;
    this.#idleMeter?.stop();
    this.#idleMeter = meterIdleCpu(
      pid,
      this.#cgroup,
      this.spec.idleCpu,
      this.#log,
      () => this.#state === "ready",
      (bound, reason) => this.#stopForBound(bound, reason),
    );
  }

  #stopForBound(bound: Bound, reason: string): void {
    this.spec.onBoundStop?.(bound, reason);
    void this.destroy(reason);
  }

  #onDeadline(open: Open, deadlineMs: number): void {
    if (this.#open.get(open.id) !== open) return;
    this.#log.warn("invocation passed its deadline; killing the satellite", { name: open.name, deadlineMs });
    this.#finishOpen(
      open,
      failure(
        WireCode.timeout,
        `'${open.name}' did not answer within its ${deadlineMs} ms deadline; the satellite was stopped`,
      ),
    );
    void this.destroy(`killed after '${open.name}' passed its deadline`);
  }

  #onFrame(frame: SatelliteFrame): void {
    switch (frame.t) {
      case "hello":
        this.#violation("a second 'hello'");
        return;
      case "result":
        this.#onResult(frame.id, frame.ok, frame.value, frame.error);
        return;
      case "cap":
        this.#onCap(frame);
        return;
    }
  }

  #onResult(id: number, ok: boolean, value: unknown, error: WireError | undefined): void {
    const open = this.#open.get(id);
    if (open === undefined) {
      this.#violation(`a 'result' for invocation ${id}, which is not open`);
      return;
    }
    this.#finishOpen(open, checkAnswer(open.kind, open.name, ok, value, error, this.spec.kinds));
  }

  #onCap(frame: Cap): void {
    const open = this.#openByToken.get(frame.token);
    const conn = this.#conn;
    if (conn === null) return;
    // Found by its token: the lookup is the comparison.
    if (open === undefined || open.answered) {
      // A late call from a tool that did not wait is a mistake; a stream of them is an attack on
      // the broker's time. Past the allowance the satellite is replaced.
      if (++this.#strayCaps > STRAY_CAP_ALLOWANCE) {
        this.#violation(`more than ${STRAY_CAP_ALLOWANCE} capability calls with no open invocation's token`);
        return;
      }
      const error = {
        code: WireCode.tokenRevoked,
        msg:
          `Capability '${frame.cap.slice(0, 64)}' carried a token that is not the open invocation's (called ` +
          `after its answer, or with a stale or forged token); it is refused`,
      };
      this.#observeRefusal(frame, error);
      conn.send({ t: "cap_result", id: frame.id, ok: false, error });
      return;
    }
    const chars = frame.args.length;
    if (
      open.capsInFlight > 0 &&
      (open.capsInFlight >= MAX_CAPS_IN_FLIGHT || open.capArgsInFlight + chars > MAX_CAP_ARGS_IN_FLIGHT)
    ) {
      conn.send({
        t: "cap_result",
        id: frame.id,
        ok: false,
        error: {
          code: WireCode.busy,
          msg:
            `Capability '${frame.cap.slice(0, 64)}' refused: ${open.capsInFlight} calls of this invocation are being ` +
            `served (at most ${MAX_CAPS_IN_FLIGHT}, with ${MAX_CAP_ARGS_IN_FLIGHT} characters of arguments); ` +
            "wait for an answer",
        },
      });
      return;
    }
    open.capsInFlight++;
    open.capArgsInFlight += chars;
    const served = () => {
      open.capsInFlight--;
      open.capArgsInFlight -= chars;
    };
    open.onCap(frame).then(
      (reply) => {
        served();
        // The answer goes back only if the satellite is still alive to read it.
        if (reply.ok) conn.send({ t: "cap_result", id: frame.id, ok: true, value: reply.value ?? null });
        else conn.send({ t: "cap_result", id: frame.id, ok: false, error: reply.error });
      },
      (err: Error) => {
        served();
        this.#log.error("capability handler failed", { cap: frame.cap, err: err.message });
        conn.send({
          t: "cap_result",
          id: frame.id,
          ok: false,
          error: { code: WireCode.crashed, msg: `The broker failed serving '${frame.cap}'` },
        });
      },
    );
  }

  #violation(what: string): void {
    this.#log.warn("protocol violation; disconnecting the satellite", { what });
    this.#conn?.close(new TetherError(BrokerCode.protocolViolation, `Satellite '${this.spec.name}' sent ${what}`));
  }

  #onDisconnect(err: Error | null): void {
    if (this.#state === "dead") return;
    if (err) {
      void this.destroy(`broke the protocol (${err.message})`);
      return;
    }
    // The socket usually closes just before the process exits: give the exit a
    // moment so the answer can say why (exit code, out of memory).
    const grace = new Promise<void>((r) => setTimeout(r, 1_000).unref());
    void Promise.race([this.#exited, grace]).then(() => this.destroy("closed its connection"));
  }

  #onExit(reason: string): void {
    this.#deathReason ||= reason;
    this.#die();
  }

  #die(): void {
    if (this.#state === "dead") return;
    this.#state = "dead";
    this.#stopWatch();
    this.#idleMeter?.stop();
    void this.#cgroup?.remove();
    const reason = this.#deathReason || "died";
    for (const open of [...this.#open.values()])
      this.#finishOpen(
        open,
        failure(WireCode.crashed, `Satellite '${this.spec.name}' ${reason} during '${open.name}'`),
      );
    this.#conn?.close();
    this.#server?.close();
    if (this.#dir !== null) rmSync(this.#dir, { recursive: true, force: true });
    for (const listener of this.#deathListeners.splice(0)) listener(reason);
  }

  /**
   * Lets the open invocations finish, then walks the shutdown ladder:
   * stdin EOF, then SIGTERM, then SIGKILL, each after a bounded wait.
   */
  async close(): Promise<void> {
    if (this.#state === "dead") return this.#exited;
    if (this.#closing !== null) return this.#closing;
    const open = [...this.#open.values()].map((o) => o.settled);
    this.#state = "draining";
    this.#closing = (async () => {
      await Promise.all(open);
      this.#deathReason ||= "was shut down";
      await this.#ladder();
    })();
    return this.#closing;
  }

  async #ladder(): Promise<void> {
    const child = this.#child;
    if (child === null) return this.#die();
    await walkShutdownLadder(child, this.#exited, this.spec.ladderStepMs, this.#log);
  }

  /** Aborts now: the open invocations fail `crashed` with `reason`, the process is killed. Safe to call twice. */
  async destroy(reason = "was destroyed"): Promise<void> {
    this.#deathReason ||= reason;
    const child = this.#child;
    if (child !== null && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    this.#die();
    await this.#exited;
  }
}
