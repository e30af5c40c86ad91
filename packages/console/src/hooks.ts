/** Loading through the typed client, reading again on live events, and the clock the pages show ages with. */
import { useEffect, useState } from "preact/hooks"
import { type LiveEvent, subscribe } from "./live.ts"
import { parseRoute, type Route } from "./routes.ts"

export interface Loaded<A> {
  readonly data: A | undefined
  readonly error: string | undefined
  readonly loading: boolean
  readonly reload: () => void
}

/** Live events closer together than this cause one read. */
const LIVE_COALESCE_MS = 500

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

/**
 * Loads `load()` when `deps` change, and again when live events pass `live` (a burst is one read). What was
 * loaded stays on screen while the next read runs, so a live update does not flash the page.
 */
export const useLoad = <A>(load: () => Promise<A>, deps: ReadonlyArray<unknown>, live?: (event: LiveEvent) => boolean): Loaded<A> => {
  const [state, setState] = useState<{ data: A | undefined; error: string | undefined; loading: boolean }>({
    data: undefined,
    error: undefined,
    loading: true
  })
  const [tick, setTick] = useState(0)
  useEffect(() => {
    let current = true
    setState((s) => ({ ...s, loading: true }))
    load().then(
      (data) => current && setState({ data, error: undefined, loading: false }),
      (error: unknown) => current && setState((s) => ({ ...s, error: messageOf(error), loading: false }))
    )
    return () => {
      current = false
    }
  }, [...deps, tick])
  useEffect(() => {
    if (live === undefined) return undefined
    // A burst of events (a batch applied) is one read, not one per event: the rate limit counts reads.
    let pending: ReturnType<typeof setTimeout> | undefined
    const unsubscribe = subscribe((event) => {
      if (!live(event) || pending !== undefined) return
      pending = setTimeout(() => {
        pending = undefined
        setTick((t) => t + 1)
      }, LIVE_COALESCE_MS)
    })
    return () => {
      unsubscribe()
      if (pending !== undefined) clearTimeout(pending)
    }
  }, [])
  return { ...state, reload: () => setTick((t) => t + 1) }
}

/** Now, every 30 s: ages and expiries move without a reload. */
export const useNow = (): number => {
  const [now, setNow] = useState(Date.now())
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 30_000)
    return () => clearInterval(timer)
  }, [])
  return now
}

/** The hash route (routes.ts), followed as the hash changes. */
export const useRoute = (): Route => {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash))
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(window.location.hash))
    window.addEventListener("hashchange", onChange)
    return () => window.removeEventListener("hashchange", onChange)
  }, [])
  return route
}
