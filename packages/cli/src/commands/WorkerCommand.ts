/**
 * `acs worker`: the apply worker as a process of its own (packages/server/src/WorkerMain.ts), for API
 * instances started with WORKER_CONCURRENCY=0. Needs DATABASE_URL; logs JSON lines on stdout like the server;
 * runs until SIGTERM or SIGINT, then finishes the job in hand (within SHUTDOWN_TIMEOUT_MS).
 */
import { workerMain } from "@acs/server/WorkerMain"
import { Command } from "@effect/cli"

export const workerCommand = Command.make("worker", {}, () => workerMain).pipe(
  Command.withDescription(
    "run the apply worker in this process, without HTTP: claims queued applies from PostgreSQL (DATABASE_URL) " +
      "until SIGTERM; API instances then run with WORKER_CONCURRENCY=0"
  )
)
