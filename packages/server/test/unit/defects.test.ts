/**
 * A defect anywhere in a handler becomes 500 `internal` with a generic message, and the cause is logged
 * with the request id that the response carries.
 */
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpServer } from "@effect/platform"
import { Effect, Layer, Logger, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { ErrorEnvelopeLive } from "../../src/http/ErrorEnvelope.ts"
import { requestLog } from "../../src/http/RequestLog.ts"

class Crashing extends HttpApiGroup.make("crashing").add(HttpApiEndpoint.get("boom", "/boom").addSuccess(Schema.String)) {}
class CrashingApi extends HttpApi.make("crashing").add(Crashing) {}

describe("defects", () => {
  it("answers 500 internal without leaking the cause, and logs the cause with the request id", async () => {
    const lines: Array<{ message: unknown; annotations: ReadonlyMap<string, unknown>; cause: string }> = []
    const capture = Logger.make(({ annotations, cause, message }) => {
      lines.push({ message, annotations: new Map(annotations), cause: String(cause) })
    })
    const handlers = HttpApiBuilder.group(CrashingApi, "crashing", (h) =>
      h.handle("boom", () => Effect.die(new Error("secret database password in a stack trace"))))
    const { dispose, handler } = HttpApiBuilder.toWebHandler(
      Layer.mergeAll(
        HttpApiBuilder.api(CrashingApi).pipe(Layer.provide(handlers)),
        ErrorEnvelopeLive,
        HttpServer.layerContext,
        Logger.replace(Logger.defaultLogger, capture)
      ),
      { middleware: requestLog }
    )
    try {
      const response = await handler(new Request("http://acs.test/boom", { headers: { "x-request-id": "req-defect-1" } }))
      expect(response.status).toBe(500)
      expect(response.headers.get("x-request-id")).toBe("req-defect-1")
      const body = await response.json() as { error: { code: string; message: string } }
      expect(body.error.code).toBe("internal")
      expect(body.error.message).not.toContain("password")
      const logged = lines.find((line) => line.cause.includes("secret database password"))
      expect(logged?.annotations.get("requestId")).toBe("req-defect-1")
    } finally {
      await dispose()
    }
  })
})
