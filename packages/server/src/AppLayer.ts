/** The composition root's layers: database (migrated and seeded), upstream, services, the HTTP surface. */
import { UpstreamTransportLive } from "@acs/upstream/UpstreamTransport"
import { Effect, Layer } from "effect"
import { Accounts } from "./accounts/Accounts.ts"
import { Approvals } from "./actions/pipeline/Approvals.ts"
import { ChangesetExpiry, ChangesetExpiryLive } from "./actions/changesets/ChangesetExpiry.ts"
import { ChangesetRevert } from "./actions/changesets/ChangesetRevert.ts"
import { Changesets } from "./actions/changesets/Changesets.ts"
import { Idempotency } from "./actions/pipeline/Idempotency.ts"
import { Ledger } from "./actions/pipeline/Ledger.ts"
import { OutsideChanges } from "./actions/outside/OutsideChanges.ts"
import { Proposals } from "./actions/pipeline/Proposals.ts"
import { Revert } from "./actions/pipeline/Revert.ts"
import { Transitions } from "./actions/pipeline/Transitions.ts"
import { Connections } from "./accounts/Connections.ts"
import { Brief } from "./accounts/Brief.ts"
import { AfterSyncLive } from "./guard/AfterSyncLive.ts"
import { Recommendations } from "./warehouse/Recommendations.ts"
import { SpendAnomaly } from "./guard/SpendAnomaly.ts"
import { Verdicts } from "./guard/Verdicts.ts"
import { Watches } from "./guard/Watches.ts"
import { Access } from "./auth/Access.ts"
import { KeyStore } from "./auth/KeyStore.ts"
import { OAuthGrants } from "./auth/OAuthGrants.ts"
import { People } from "./auth/People.ts"
import { SecretBox } from "./db/SecretBox.ts"
import { Sessions } from "./auth/Sessions.ts"
import { bootstrap } from "./auth/Bootstrap.ts"
import { DatabaseLive } from "./db/Database.ts"
import { runMigrations } from "./db/Migrations.ts"
import { HttpServerLive } from "./http/HttpServerLive.ts"
import { RateLimits } from "./limits/RateLimits.ts"
import { Audits } from "./plan/Audits.ts"
import { Plan } from "./plan/Plan.ts"
import { PolicyDocument } from "./actions/policy/PolicyDocument.ts"
import { Guardrails } from "./policy/Guardrails.ts"
import { Targets } from "./policy/Targets.ts"
import { OrgSettings } from "./settings/Settings.ts"
import { Reports } from "./research/Reports.ts"
import { Research } from "./research/Research.ts"
import { connectDemo } from "./upstream/DemoSetup.ts"
import { SimulatorLive } from "./upstream/SimulatorLive.ts"
import { UpstreamLive } from "./upstream/UpstreamLive.ts"
import { Reads } from "./warehouse/Reads.ts"
import { CredentialLimits, RateLimitObserverLive } from "./warehouse/CredentialLimits.ts"
import { Syncs } from "./warehouse/Syncs.ts"
import { SyncScheduler } from "./warehouse/SyncScheduler.ts"
import { SyncRuns } from "./warehouse/SyncRuns.ts"
import { Apply } from "./worker/Apply.ts"
import { ChangesetRun } from "./worker/ChangesetRun.ts"
import { Jobs } from "./queue/Jobs.ts"
import { ChangeHistoryPollLive } from "./worker/ChangeHistoryPoll.ts"
import { WorkerLive } from "./worker/Worker.ts"
import { WorkerSignal } from "./queue/WorkerSignal.ts"
import { ApprovalExpiry, ApprovalExpiryLive } from "./actions/pipeline/ApprovalExpiry.ts"
import { EventLog } from "./feeds/EventLog.ts"
import { RetentionLive } from "./webhooks/Retention.ts"
import { EventSignal } from "./events/EventSignal.ts"
import { EventStream } from "./feeds/EventStream.ts"
import { Sequencer, SequencerLive } from "./events/Sequencer.ts"
import { Webhooks } from "./webhooks/Webhooks.ts"
import { Deliveries } from "./webhooks/Deliveries.ts"
import { WebhookWorkerLive } from "./webhooks/WebhookWorker.ts"
import { SlackSigningSecrets } from "./webhooks/SlackSigningSecrets.ts"
import { SlackAppFacts } from "./webhooks/SlackAppFacts.ts"
import { MetricsPortLive } from "./telemetry/MetricsExposition.ts"
import { withTracing } from "./telemetry/Tracing.ts"

/** The upstream port: Apple's clients over undici (UpstreamTransport.ts), and the simulator unless UPSTREAM=apple. */
export const UpstreamPortLive = UpstreamLive.pipe(Layer.provide(SimulatorLive), Layer.provide(UpstreamTransportLive))

/** Services over the database and the upstream port. */
const ServicesBelowLive = Layer.mergeAll(
  Access.Default,
  KeyStore.Default,
  OAuthGrants.Default,
  Sessions.Default,
  People.Default,
  Reads.Default,
  Syncs.Default,
  Changesets.Default,
  ChangesetExpiry.Default,
  ChangesetRevert.Default,
  Approvals.Default,
  Revert.Default,
  PolicyDocument.Default,
  Targets.Default,
  Verdicts.Default,
  Plan.Default,
  Audits.Default,
  Brief.Default,
  Reports.Default,
  Research.Default,
  EventLog.Default,
  EventStream.Default,
  Webhooks.Default,
  SlackSigningSecrets.Default,
  SlackAppFacts.Default,
  ApprovalExpiry.Default,
  ChangesetRun.Default
).pipe(
  Layer.provideMerge(Proposals.Default),
  Layer.provideMerge(AfterSyncLive),
  Layer.provideMerge(Layer.mergeAll(Watches.Default, SpendAnomaly.Default, Recommendations.Default)),
  Layer.provideMerge(Layer.mergeAll(Apply.Default, Idempotency.Default, OutsideChanges.Default)),
  Layer.provideMerge(Layer.mergeAll(Connections.Default, SyncRuns.Default, CredentialLimits.Default, Ledger.Default, Transitions.Default, Jobs.Default, WorkerSignal.Default)),
  // One per instance: the sequencer wakes this instance's streams and webhook workers through it.
  Layer.provideMerge(Layer.mergeAll(EventSignal.Default, Sequencer.Default, Deliveries.Default)),
  Layer.provideMerge(Layer.mergeAll(Accounts.Default, RateLimits.Default, SecretBox.Default, OrgSettings.Default, Guardrails.Default)),
  // An exhausted request budget is recorded per credential for the sync scheduler (CredentialLimits.ts).
  Layer.provideMerge(UpstreamPortLive.pipe(Layer.provide(RateLimitObserverLive)))
)

/** The services, with the sync scheduler over the syncs it starts. */
export const ServicesLive = SyncScheduler.Default.pipe(Layer.provideMerge(ServicesBelowLive))

/** The database, migrated and seeded before anything else may use it. */
export const MigratedDatabaseLive = Layer.effectDiscard(
  runMigrations(bootstrap).pipe(Effect.provide(Layer.mergeAll(KeyStore.Default, People.Default).pipe(Layer.provide(Accounts.Default))))
).pipe(Layer.provideMerge(DatabaseLive))

const DemoLive = Layer.effectDiscard(connectDemo)

export const AppLive = Layer.mergeAll(
  HttpServerLive,
  MetricsPortLive,
  WorkerLive,
  ChangeHistoryPollLive,
  SequencerLive,
  WebhookWorkerLive,
  RetentionLive,
  ApprovalExpiryLive,
  ChangesetExpiryLive
).pipe(
  Layer.provide(DemoLive),
  Layer.provideMerge(ServicesLive),
  Layer.provide(MigratedDatabaseLive),
  withTracing
)
