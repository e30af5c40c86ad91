/** Starts an apply-worker process (WorkerMain.ts); `acs worker` runs the same program. */
import { NodeRuntime } from "@effect/platform-node"
import { workerMain } from "../WorkerMain.ts"

NodeRuntime.runMain(workerMain, { disablePrettyLogger: true })
