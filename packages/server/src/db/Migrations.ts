/**
 * Runs the migrations at start. Every instance takes the same transaction-scoped advisory lock first,
 * so two instances starting at once apply each migration exactly once (the migrator's own table lock
 * cannot cover the creation of its table).
 */
import { Migrator } from "@effect/sql"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import foundation from "./migrations/0001_foundation.ts"
import warehouse from "./migrations/0002_warehouse.ts"
import syncGenerations from "./migrations/0003_sync_generations.ts"
import changePipeline from "./migrations/0004_change_pipeline.ts"
import plansAuditsBrief from "./migrations/0005_plans_audits_brief.ts"
import fourEyes from "./migrations/0006_four_eyes.ts"
import priorFieldNames from "./migrations/0007_prior_field_names.ts"
import connectionApiVersion from "./migrations/0008_connection_api_version.ts"
import outsideChanges from "./migrations/0009_outside_changes.ts"
import expiredStatus from "./migrations/0010_expired_status.ts"
import eventsWebhooks from "./migrations/0011_events_webhooks.ts"
import proposalStatement from "./migrations/0012_proposal_statement_and_invalidation.ts"
import traceContext from "./migrations/0013_trace_context.ts"
import eventTraceContext from "./migrations/0014_event_trace_context.ts"
import revertedByIndex from "./migrations/0015_reverted_by_index.ts"
import queuedAt from "./migrations/0016_queued_at.ts"
import settingsTargetsInvalidation from "./migrations/0017_settings_targets_invalidation.ts"
import sequenceEventsFunction from "./migrations/0018_sequence_events_function.ts"
import sessionInvalidation from "./migrations/0019_session_invalidation.ts"
import deliveryEventReference from "./migrations/0020_delivery_event_reference.ts"
import writeBackFunction from "./migrations/0021_write_back_function.ts"
import accountWindowPlpgsql from "./migrations/0022_account_window_plpgsql.ts"
import deliveryDueOrder from "./migrations/0023_delivery_due_order.ts"
import hotActionUpdates from "./migrations/0024_hot_action_updates.ts"
import deliveryCursors from "./migrations/0025_delivery_cursors.ts"
import deliveredBatches from "./migrations/0026_delivered_batches.ts"
import whoMayApprove from "./migrations/0027_who_may_approve.ts"
import functionFiles from "./migrations/0028_function_files.ts"
import webhookIsolation from "./migrations/0029_webhook_isolation.ts"
import changesets from "./migrations/0030_changesets.ts"
import guardrails from "./migrations/0031_guardrails.ts"
import guardrailReads from "./migrations/0032_guardrail_reads.ts"
import changesetApprovals from "./migrations/0033_changeset_approvals.ts"
import orgGuard from "./migrations/0034_org_guard.ts"
import watches from "./migrations/0035_watches.ts"
import changePlaces from "./migrations/0036_change_places.ts"
import searchTermSources from "./migrations/0037_search_term_sources.ts"
import recommendations from "./migrations/0038_recommendations.ts"
import slackApprovals from "./migrations/0039_slack_approvals.ts"
import oauth from "./migrations/0040_oauth.ts"
import noTriggers from "./migrations/0041_no_triggers.ts"
import syncQueue from "./migrations/0042_sync_queue.ts"
import accountKeys from "./migrations/0043_account_keys.ts"
import orgKeys from "./migrations/0044_org_keys.ts"
import deliveryLogPartitions from "./migrations/0045_delivery_log_partitions.ts"
import eventBodyInStatements from "./migrations/0046_event_body_in_statements.ts"
import citusStatements from "./migrations/0047_citus_statements.ts"
import eventPartitions from "./migrations/0048_event_partitions.ts"
import deliveryDuePerOrg from "./migrations/0049_delivery_due_per_org.ts"
import metricMonths from "./migrations/0050_metric_months.ts"

export const MIGRATION_LOCK = 4_242_001

const migrate = Migrator.make({})

export const migrations = {
  "0001_foundation": foundation,
  "0002_warehouse": warehouse,
  "0003_sync_generations": syncGenerations,
  "0004_change_pipeline": changePipeline,
  "0005_plans_audits_brief": plansAuditsBrief,
  "0006_four_eyes": fourEyes,
  "0007_prior_field_names": priorFieldNames,
  "0008_connection_api_version": connectionApiVersion,
  "0009_outside_changes": outsideChanges,
  "0010_expired_status": expiredStatus,
  "0011_events_webhooks": eventsWebhooks,
  "0012_proposal_statement_and_invalidation": proposalStatement,
  "0013_trace_context": traceContext,
  "0014_event_trace_context": eventTraceContext,
  "0015_reverted_by_index": revertedByIndex,
  "0016_queued_at": queuedAt,
  "0017_settings_targets_invalidation": settingsTargetsInvalidation,
  "0018_sequence_events_function": sequenceEventsFunction,
  "0019_session_invalidation": sessionInvalidation,
  "0020_delivery_event_reference": deliveryEventReference,
  "0021_write_back_function": writeBackFunction,
  "0022_account_window_plpgsql": accountWindowPlpgsql,
  "0023_delivery_due_order": deliveryDueOrder,
  "0024_hot_action_updates": hotActionUpdates,
  "0025_delivery_cursors": deliveryCursors,
  "0026_delivered_batches": deliveredBatches,
  "0027_who_may_approve": whoMayApprove,
  "0028_function_files": functionFiles,
  "0029_webhook_isolation": webhookIsolation,
  "0030_changesets": changesets,
  "0031_guardrails": guardrails,
  "0032_guardrail_reads": guardrailReads,
  "0033_changeset_approvals": changesetApprovals,
  "0034_org_guard": orgGuard,
  "0035_watches": watches,
  "0036_change_places": changePlaces,
  "0037_search_term_sources": searchTermSources,
  "0038_recommendations": recommendations,
  "0039_slack_approvals": slackApprovals,
  "0040_oauth": oauth,
  "0041_no_triggers": noTriggers,
  "0042_sync_queue": syncQueue,
  "0043_account_keys": accountKeys,
  "0044_org_keys": orgKeys,
  "0045_delivery_log_partitions": deliveryLogPartitions,
  "0046_event_body_in_statements": eventBodyInStatements,
  "0047_citus_statements": citusStatements,
  "0048_event_partitions": eventPartitions,
  "0049_delivery_due_per_org": deliveryDuePerOrg,
  "0050_metric_months": metricMonths
}

export const loader = Migrator.fromRecord(migrations)

export const migrationCount = Object.keys(migrations).length

/** Runs `then` inside the same locked transaction, after the migrations (used for first-start seeding). */
export const runMigrations = <A, E, R>(then: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(
      Effect.gen(function*() {
        yield* sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`
        // The migrator probes its table with a query that would abort our transaction when it is absent.
        yield* sql`CREATE TABLE IF NOT EXISTS effect_sql_migrations (
          migration_id integer PRIMARY KEY,
          created_at timestamptz NOT NULL DEFAULT now(),
          name text NOT NULL
        )`
        const applied = yield* migrate({ loader })
        for (const [id, name] of applied) yield* Effect.logInfo("migration applied").pipe(Effect.annotateLogs({ id, name }))
        return yield* then
      })
    )
  }).pipe(Effect.withSpan("Migrations.run"))
