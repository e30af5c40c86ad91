/**
 * The console (packages/console) at `/`, in front of the API app: `GET /` answers its index.html and
 * `/assets/<file>` its bundle and stylesheet, read from the built directory (`CONSOLE_DIR`, default
 * `packages/console/dist` under the working directory, where `pnpm build:console` writes it). The page is
 * held to a strict Content-Security-Policy: only this origin's scripts, styles and connections, no inline
 * script, no framing. A console that was not built answers 503 saying how to build it, not a 500.
 */
import { type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Config, Effect } from "effect"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { CONSENT_PATH } from "./OAuthRoute.ts"
import { hasBody } from "./RequestBody.ts"
import { pathOf } from "./RequestPath.ts"

export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'"
].join("; ")

const ConsoleDir = Config.string("CONSOLE_DIR").pipe(Config.withDefault("packages/console/dist"))

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png"
}

/** A file of the build's assets directory: one name, no directories, no dot files. */
const ASSET = /^\/assets\/([A-Za-z0-9_-][A-Za-z0-9._-]*)$/

/** The built file a path names, relative to the console directory; undefined for a path that is not the console's. */
const fileOf = (path: string): string | undefined => {
  // The OAuth consent page is the console's too (http/OAuthRoute.ts sends the browser there).
  if (path === "/" || path === "/index.html" || path === CONSENT_PATH) return "index.html"
  const asset = ASSET.exec(path)
  return asset === null ? undefined : Path.join("assets", asset[1]!)
}

const notBuilt = (dir: string) =>
  HttpServerResponse.text(
    `The acs console is not built (nothing at ${dir}). Build it with \`npx --yes pnpm@10 build:console\` ` +
      "(`pnpm start` and `pnpm test` do this first), then reload. The API is at /api/v1 and its reference at /docs.\n",
    { status: 503, headers: { "content-security-policy": CONSOLE_CSP } }
  )

const answerConsole = (file: string) =>
  Effect.gen(function*() {
    const dir = Path.resolve(yield* Effect.orDie(ConsoleDir))
    const bytes = yield* Effect.option(Effect.tryPromise(() => Fs.readFile(Path.join(dir, file))))
    if (bytes._tag === "None") {
      return file === "index.html"
        ? notBuilt(dir)
        : HttpServerResponse.text(`no console asset ${file}\n`, { status: 404 })
    }
    return HttpServerResponse.uint8Array(bytes.value, {
      contentType: CONTENT_TYPES[Path.extname(file)] ?? "application/octet-stream",
      headers: { "content-security-policy": CONSOLE_CSP, "referrer-policy": "same-origin", "x-frame-options": "DENY" }
    })
  })

/**
 * A request that says a body follows is never answered a page past its unread body: it goes to the API, whose
 * front door applies its body rules (over 1 MiB refused, whatever the framing) before anything else.
 */
export const withConsole = <E, R>(app: HttpApp.Default<E, R>) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> => {
    const file = (request.method === "GET" || request.method === "HEAD") && !hasBody(request) ? fileOf(pathOf(request.url)) : undefined
    return file === undefined ? app : answerConsole(file)
  })
