/** An approval over RPC (the typed `AcsClient`) with a key: undefined when it succeeded, else its failure. */
import { AcsClient } from "@acs/domain/AcsClient"
import { Cause, Effect, Exit, ManagedRuntime, Option } from "effect"

export const rpcApprove = async (url: string, key: string, projectId: string, actionId: string) => {
  const runtime = ManagedRuntime.make(AcsClient.layer({ url, key }))
  try {
    const exit = await runtime.runPromiseExit(Effect.flatMap(AcsClient, (client) => client.approveAction({ path: { projectId, actionId } })))
    return Exit.isSuccess(exit) ? undefined : Option.getOrUndefined(Cause.failureOption(exit.cause))
  } finally {
    await runtime.dispose()
  }
}
