/**
 * The shape of the code (docs/decisions/architecture.md "Layers"): in packages/server/src a folder imports only
 * from folders below it, never from one above or beside it; no module of any package's src imports itself back
 * through others (type-only imports included); and each table has one owner module, the only one that writes it.
 * All are read from the source, so a new import or a stray UPDATE fails here.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"

const SRC = Path.resolve(import.meta.dirname, "../../src")

/** Lowest first. Folders on one line are independent of each other. */
const LAYERS: ReadonlyArray<ReadonlyArray<string>> = [
  ["db", "telemetry"],
  ["events"],
  ["limits", "queue"],
  ["accounts"],
  ["auth"],
  ["settings"],
  ["warehouse"],
  ["policy"],
  ["actions"],
  ["worker", "plan", "research", "webhooks", "guard"],
  ["feeds"],
  ["operations"],
  ["rpc", "mcp"],
  ["http"],
  ["upstream"]
]


const rank = new Map(LAYERS.flatMap((folders, index) => folders.map((folder) => [folder, index] as const)))

const sourceFilesWith = (dir: string, name: RegExp): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    return entry.isDirectory() ? sourceFilesWith(path, name) : name.test(entry.name) ? [path] : []
  })

const sourceFiles = (dir: string): Array<string> => sourceFilesWith(dir, /\.ts$/)

/** The top folder under src/ of a file, or undefined for the composition root (bin/, AppLayer.ts, WorkerMain.ts). */
const folderOf = (file: string): string | undefined => {
  const parts = Path.relative(SRC, file).split(Path.sep)
  return parts.length > 1 && parts[0] !== "bin" ? parts[0] : undefined
}

const relativeImports = (file: string): Array<string> =>
  [...Fs.readFileSync(file, "utf8").matchAll(/(?:from|import)\s+"(\.{1,2}\/[^"]+)"/g)].map((match) =>
    Path.resolve(Path.dirname(file), match[1]!)
  )

/**
 * Each table's owner: the one module under src/ whose statements write it (docs/decisions/architecture.md "One
 * owner per table"), then any PL/pgSQL function file that writes it as part of a statement the owner runs. Other
 * modules read the table or call the owner's statements and fragments.
 */
const OWNERS: Readonly<Record<string, ReadonlyArray<string>>> = {
  accounts: ["accounts/Accounts.ts"],
  action_steps: ["worker/ActionSteps.ts"],
  actions: ["actions/pipeline/Transitions.ts"],
  changesets: ["actions/changesets/ChangesetStore.ts"],
  ad_groups: ["warehouse/SyncEntities.ts", "db/functions/acs_write_back.sql"],
  ads: ["warehouse/SyncEntities.ts", "db/functions/acs_write_back.sql"],
  api_keys: ["auth/KeyStore.ts"],
  audits: ["plan/Audits.ts"],
  briefs: ["accounts/Brief.ts"],
  campaigns: ["warehouse/SyncEntities.ts", "db/functions/acs_write_back.sql"],
  change_history_marks: ["actions/outside/OutsideChanges.ts"],
  connection_key_pairs: ["accounts/Connections.ts"],
  connections: ["accounts/Connections.ts"],
  credential_limits: ["warehouse/CredentialLimits.ts"],
  cooldown_marks: ["actions/pipeline/Transitions.ts"],
  daily_metrics: ["warehouse/SwapCopy.ts"],
  event_sequencer: ["events/Outbox.ts", "db/functions/acs_sequence_events.sql"],
  events: ["events/Outbox.ts", "db/functions/acs_sequence_events.sql"],
  guardrails: ["policy/Guardrails.ts"],
  idempotency_keys: ["actions/pipeline/Idempotency.ts"],
  jobs: ["queue/Jobs.ts"],
  keywords: ["warehouse/SyncEntities.ts", "db/functions/acs_write_back.sql"],
  metric_generations: ["warehouse/SwapCopy.ts"],
  negative_keywords: ["warehouse/SyncEntities.ts", "db/functions/acs_write_back.sql"],
  oauth_clients: ["auth/OAuthClients.ts"],
  oauth_codes: ["auth/OAuthGrants.ts"],
  oauth_refresh_tokens: ["auth/OAuthGrants.ts"],
  orgs: ["accounts/Orgs.ts"],
  people: ["auth/People.ts"],
  recommendations: ["warehouse/Recommendations.ts"],
  search_terms: ["warehouse/SwapCopy.ts"],
  slack_seen_signatures: ["webhooks/SlackSigningSecrets.ts"],
  slack_signing_secrets: ["webhooks/SlackSigningSecrets.ts"],
  sessions: ["auth/SessionStore.ts"],
  spend_suffixes: ["warehouse/SwapCopy.ts"],
  staged_metrics: ["warehouse/StageMetrics.ts"],
  syncs: ["warehouse/SyncRuns.ts"],
  targets: ["policy/Targets.ts"],
  watches: ["guard/Watches.ts"],
  change_places: ["guard/ChangePlaces.ts"],
  webhook_batches: ["webhooks/Deliveries.ts"],
  webhook_delivered_batches: ["webhooks/Deliveries.ts"],
  webhook_deliveries: ["webhooks/Deliveries.ts"],
  webhooks: ["webhooks/Endpoints.ts", "db/functions/acs_sequence_events.sql"]
}


/** The tables the migrations create. */
const tables = (): Set<string> =>
  new Set(
    sourceFiles(Path.join(SRC, "db", "migrations")).flatMap((file) =>
      [...Fs.readFileSync(file, "utf8").matchAll(/CREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([a-z_]+)/gi)]
        .map((match) => match[1]!.toLowerCase())
    )
  )

/** "table <- file" for every statement under src/ (migrations aside) that inserts, updates or deletes a table's rows. */
const writes = (known: Set<string>): Array<string> =>
  sourceFilesWith(SRC, /\.(?:ts|sql)$/).flatMap((file) => {
    const path = Path.relative(SRC, file)
    if (path.startsWith(Path.join("db", "migrations"))) return []
    const text = Fs.readFileSync(file, "utf8")
    const written = [...text.matchAll(/\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+([a-z_]+)\b/gi)]
      .map((match) => match[1]!.toLowerCase())
      .filter((table) => known.has(table))
    return [...new Set(written)].map((table) => `${table} <- ${path.split(Path.sep).join("/")}`)
  })

describe("packages/server/src", () => {
  it("imports only down the layers", () => {
    const upward: Array<string> = []
    for (const file of sourceFiles(SRC)) {
      const from = folderOf(file)
      if (from === undefined) continue
      expect(rank.has(from), `src/${from} is not in LAYERS`).toBe(true)
      for (const target of relativeImports(file)) {
        const to = folderOf(target)
        if (to === undefined) {
          upward.push(`${Path.relative(SRC, file)} -> the composition root`)
          continue
        }
        if (to === from) continue
        if (rank.get(to)! >= rank.get(from)!) upward.push(`${Path.relative(SRC, file)} -> ${Path.relative(SRC, target)}`)
      }
    }
    expect(upward).toEqual([])
  })

  it("has one owner for each table, and only the owner writes it (or a function it runs)", () => {
    const known = tables()
    expect(Object.keys(OWNERS).sort(), "every table the migrations create has an owner").toEqual([...known].sort())
    const strays = writes(known).filter((write) => {
      const [table, file] = write.split(" <- ") as [string, string]
      return !OWNERS[table]!.includes(file)
    })
    expect(strays).toEqual([])
  })

})

const PACKAGES = Path.resolve(import.meta.dirname, "../../..")

/** Every module of every package's src, and the modules each imports (relative or `@acs/<package>/…`, type-only too). */
const importGraph = (): Map<string, ReadonlyArray<string>> => {
  const files = Fs.readdirSync(PACKAGES).flatMap((name) => {
    const src = Path.join(PACKAGES, name, "src")
    return Fs.existsSync(src) ? sourceModules(src) : []
  })
  const known = new Set(files)
  const resolve = (file: string, specifier: string): string | undefined => {
    const alias = /^@acs\/([a-z]+)\/(.+)$/.exec(specifier)
    const base = alias !== null
      ? Path.join(PACKAGES, alias[1]!, "src", alias[2]!)
      : specifier.startsWith(".")
      ? Path.resolve(Path.dirname(file), specifier)
      : undefined
    return base === undefined ? undefined : [base, `${base}.ts`, `${base}.tsx`].find((candidate) => known.has(candidate))
  }
  return new Map(files.map((file) => [
    file,
    [...Fs.readFileSync(file, "utf8").matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)].flatMap((match) => {
      const target = resolve(file, match[1]!)
      return target === undefined ? [] : [target]
    })
  ]))
}

const sourceModules = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    return entry.isDirectory() ? sourceModules(path) : /\.tsx?$/.test(entry.name) ? [path] : []
  })

/** The strongly connected components of more than one module (Tarjan's algorithm): each is an import circle. */
const circles = (graph: Map<string, ReadonlyArray<string>>): Array<Array<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  const visit = (module: string): void => {
    index.set(module, index.size)
    low.set(module, index.get(module)!)
    stack.push(module)
    onStack.add(module)
    for (const next of graph.get(module) ?? []) {
      if (!index.has(next)) {
        visit(next)
        low.set(module, Math.min(low.get(module)!, low.get(next)!))
      } else if (onStack.has(next)) low.set(module, Math.min(low.get(module)!, index.get(next)!))
    }
    if (low.get(module) === index.get(module)) {
      const component: Array<string> = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(Path.relative(PACKAGES, member))
      } while (member !== module)
      if (component.length > 1) found.push(component.sort())
    }
  }
  for (const module of graph.keys()) if (!index.has(module)) visit(module)
  return found
}

describe("packages/*/src", () => {
  it("has no import circles (type-only imports included)", () => {
    const graph = importGraph()
    expect(graph.size).toBeGreaterThan(300)
    expect(circles(graph)).toEqual([])
  })

  it("finds a circle when there is one", () => {
    const graph = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]])
    expect(circles(graph)).toEqual([["a", "b", "c"].map((name) => Path.relative(PACKAGES, name))])
  })
})

describe("the test files", () => {
  it("take @effect/vitest's layer only through test/support/layerBlock.ts, which puts the shared runners back", () => {
    const TEST = Path.resolve(import.meta.dirname, "..")
    const direct = sourceFilesWith(Path.resolve(TEST, "../.."), /\.test\.ts$/)
      .filter((file) => !file.includes(`${Path.sep}node_modules${Path.sep}`))
      .filter((file) => /import\s*{[^}]*\blayer\b[^}]*}\s*from\s*"@effect\/vitest"/.test(Fs.readFileSync(file, "utf8")))
    expect(direct.map((file) => Path.relative(TEST, file))).toEqual([])
    expect(sourceFilesWith(TEST, /\.test\.ts$/).filter((file) => Fs.readFileSync(file, "utf8").includes("support/layerBlock.ts")).length)
      .toBeGreaterThan(10)
  })
})
