/**
 * A real HTTP webhook receiver for the tests: records every POST (headers, raw body) and answers as the
 * test says — a status, a redirect, or no answer at all (a hang, until the test releases it).
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export interface Received {
  readonly eventId: string | undefined
  readonly signature: string | undefined
  readonly rawBody: string
  readonly body: Record<string, unknown>
  /** The answer the receiver gave (or "hang"). */
  readonly answered: number | "hang"
  /** The request's path and query: which endpoint it was sent to. */
  readonly path: string
  /** When the request was in whole (Date.now(): the machine's clock, as the events' createdAt). */
  readonly receivedAt: number
}

/** `body` replaces the default answer's body ("ok", or a long refusal from 400 up). */
export type Answer = { readonly status: number; readonly location?: string; readonly body?: string } | "hang"

export interface Receiver {
  readonly url: string
  readonly received: Array<Received>
  /** What to answer the n-th request (0-based) of an event; 200 unless said. */
  answer: (eventId: string | undefined, attempt: number) => Answer
  /** Ends the hung requests: cut off, or answered `status` when given. */
  readonly releaseHung: (status?: number) => void
  readonly close: () => Promise<void>
}

export const startReceiver = async (): Promise<Receiver> => {
  const attempts = new Map<string, number>()
  const hung: Array<Http.ServerResponse> = []
  const received: Array<Received> = []
  const receiver: Receiver = {
    url: "",
    received,
    answer: () => ({ status: 200 }),
    releaseHung: (status) => {
      for (const response of hung.splice(0)) {
        if (status === undefined) response.destroy()
        else response.writeHead(status).end("ok")
      }
    },
    close: () =>
      new Promise((resolve) => {
        receiver.releaseHung()
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
  const server = Http.createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const receivedAt = Date.now()
      const rawBody = Buffer.concat(chunks).toString("utf8")
      const eventId = request.headers["acs-event-id"] as string | undefined
      const attempt = attempts.get(eventId ?? "") ?? 0
      attempts.set(eventId ?? "", attempt + 1)
      const answer = receiver.answer(eventId, attempt)
      received.push({
        eventId,
        signature: request.headers["acs-signature"] as string | undefined,
        rawBody,
        body: JSON.parse(rawBody) as Record<string, unknown>,
        answered: answer === "hang" ? "hang" : answer.status,
        path: request.url ?? "",
        receivedAt
      })
      if (answer === "hang") return void hung.push(response)
      response.writeHead(answer.status, answer.location === undefined ? {} : { location: answer.location })
      response.end(answer.body ?? (answer.status >= 400 ? "receiver says no ".repeat(200) : "ok"))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  Object.assign(receiver, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` })
  return receiver
}
