// The outbound sink (bench/outbound-sink.ts) as a child process of a benchmark: started, configured and asked for
// the records of what it received, over IPC.
import { fork, type ChildProcess } from "node:child_process";
import { resolve } from "node:path";
import type { SinkCommand, SinkOptions, SinkTake } from "./outbound-sink.js";
import { stopChild, type Teardown } from "./stack.js";

export interface Sink {
  readonly port: number;
  readonly pid: number;
  /** Every record since the last take, and the counters so far. */
  take(): Promise<SinkTake>;
  setOptions(options: SinkOptions): Promise<void>;
}

export async function startSink(options: SinkOptions, teardown: Teardown): Promise<Sink> {
  const child: ChildProcess = fork(resolve("bench/outbound-sink.ts"), [], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  teardown.add(() => stopChild(child));
  const port = await new Promise<number>((resolvePort, reject) => {
    child.once("exit", (code) => reject(new Error(`the sink exited with code ${code}`)));
    child.once("message", (m: { ready?: number }) => (m.ready ? resolvePort(m.ready) : reject(new Error("unexpected sink message"))));
  });
  const ask = <T>(command: SinkCommand, key: string): Promise<T> =>
    new Promise((resolveAnswer) => {
      const onMessage = (m: Record<string, unknown>) => {
        if (!(key in m)) return;
        child.off("message", onMessage);
        resolveAnswer(m[key] as T);
      };
      child.on("message", onMessage);
      child.send(command);
    });
  const sink: Sink = {
    port,
    pid: child.pid!,
    take: () => ask<SinkTake>({ cmd: "take" }, "taken"),
    setOptions: async (o) => {
      await ask<boolean>({ cmd: "options", options: o }, "options");
    },
  };
  await sink.setOptions(options);
  return sink;
}
