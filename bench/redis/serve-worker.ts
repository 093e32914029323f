// The IPC side of a bench worker process (protocol.ts): starts the consumer,
// says when it is ready, sends progress, answers report and stop. Shared by
// the Redis, recurring and PostgreSQL benches' workers.
import type { ParentMessage, WorkerMessage } from './protocol';
import type { Recorder } from './recorder';

function send(message: WorkerMessage): void {
  process.send?.(message);
}

/**
 * `start` starts consuming and returns how to stop. With `quiet`, no timer of
 * the bench's own runs in the process (no progress messages, no event-loop
 * monitor), so its CPU is the consumer's alone.
 */
export function serveWorker(recorder: Recorder, start: () => Promise<() => Promise<void>>, quiet = false): void {
  const main = async (): Promise<void> => {
    const stop = await start();
    recorder.ready(!quiet);
    let lastDone = -1;
    const progress = quiet
      ? undefined
      : setInterval(() => {
          if (recorder.done !== lastDone) {
            lastDone = recorder.done;
            send({ type: 'progress', done: lastDone });
          }
        }, 50);
    process.on('message', (message: ParentMessage) => {
      if (message.type === 'report') {
        send({ type: 'report', report: recorder.report() });
      } else {
        clearInterval(progress);
        void stop().finally(() => process.exit(0));
      }
    });
    send({ type: 'ready' });
  };
  main().catch((error: unknown) => {
    send({ type: 'failed', error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    process.exit(1);
  });
}
