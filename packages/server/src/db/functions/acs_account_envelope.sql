-- An account's spend envelope now (docs/contract.md 3.3), in micros: the net change of daily budgets applied in
-- the last 24 hours; the raises reserved (`reserving`: recorded and not ended; a demoted one, which `queued_at`
-- marks, only once a person approved it again), of which `committed` are approved and on their way; the sum of the
-- campaigns' daily budgets in the warehouse; the 24-hour envelope in effect (the admin's, else 20 % of the total as
-- it was 24 hours ago); the ceiling (null: none). Without `whole`, only what the ceiling's check needs: nothing
-- (zeros and no ceiling) when the account has no ceiling (a raise that queues anyway is held only by the ceiling).
-- PL/pgSQL keeps each query's plan per connection; a SQL function is planned at every call, and so is a query whose
-- parameter decides what it reads (its generic plan looks dearer than each custom one).
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_account_envelope(account text, whole boolean DEFAULT true)
 RETURNS TABLE(used numeric, reserved numeric, committed numeric, total numeric, max_increase numeric, max_total numeric)
 LANGUAGE plpgsql
 STABLE ROWS 1
AS $function$
    BEGIN
      IF NOT whole AND NOT EXISTS (SELECT FROM guardrails g
          WHERE g.project_id = account AND jsonb_typeof(g.settings #> '{envelope,maxTotalDailyBudgetMicros}') = 'number') THEN
        RETURN QUERY SELECT 0::numeric, 0::numeric, 0::numeric, 0::numeric, NULL::numeric, NULL::numeric;
        RETURN;
      END IF;
      RETURN QUERY WITH set_by_admin AS (SELECT g.settings -> 'envelope' AS envelope FROM guardrails g WHERE g.project_id = account),
      applied AS (
        SELECT COALESCE(sum(a.budget_delta_micros), 0) AS used FROM actions a
        WHERE a.project_id = account AND a.budget_applied_at > clock_timestamp() - interval '24 hours'),
      held AS (
        SELECT COALESCE(sum(a.budget_delta_micros), 0) AS reserved,
          COALESCE(sum(a.budget_delta_micros) FILTER (WHERE a.status <> 'proposed'), 0) AS committed
        FROM actions a WHERE a.project_id = account AND a.reserving),
      budgets AS (SELECT COALESCE(sum(c.daily_budget_micros), 0)::numeric AS total FROM campaigns c WHERE c.project_id = account)
      SELECT applied.used, held.reserved, held.committed, budgets.total,
        COALESCE((SELECT (envelope ->> 'maxDailyBudgetIncreaseMicros24h')::numeric FROM set_by_admin),
          trunc(GREATEST(budgets.total - applied.used, 0) * 20 / 100)),
        (SELECT (envelope ->> 'maxTotalDailyBudgetMicros')::numeric FROM set_by_admin)
      FROM applied, held, budgets;
    END $function$
