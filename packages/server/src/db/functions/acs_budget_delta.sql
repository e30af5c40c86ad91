-- How much an action changes the sum of the account's campaign daily budgets, in micros (positive: a raise):
-- `actions.budget_delta_micros` is generated from it, so every way a row is written (a proposal, a member, a revert,
-- an outside change) is priced the same. A payload that does not say is 0; it never fails (a rejected proposal
-- keeps whatever body it was sent). PL/pgSQL: its plan is kept per connection; as a SQL function it was planned at
-- each of its calls (three per insert and per update of an action, for the generated columns).
-- The current body, installed by the migrations (db/functions/FunctionFiles.ts); edit it here.
CREATE OR REPLACE FUNCTION public.acs_budget_delta(kind text, payload jsonb)
 RETURNS numeric
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
    BEGIN
      RETURN CASE
        WHEN kind IN ('budget_change', 'apply_recommendation')
          AND jsonb_typeof(payload -> 'newDailyBudgetMicros') = 'number'
          AND jsonb_typeof(payload -> 'priorDailyBudgetMicros') = 'number'
          THEN (payload ->> 'newDailyBudgetMicros')::numeric - (payload ->> 'priorDailyBudgetMicros')::numeric
        WHEN kind IN ('create_campaign', 'clone_campaign') AND jsonb_typeof(payload -> 'dailyBudgetMicros') = 'number'
          THEN (payload ->> 'dailyBudgetMicros')::numeric
        WHEN kind = 'external_change' AND payload #>> '{entity,type}' = 'campaign' THEN COALESCE((
          SELECT (c ->> 'newValue')::numeric - (c ->> 'oldValue')::numeric
          FROM jsonb_array_elements(CASE WHEN jsonb_typeof(payload -> 'changes') = 'array' THEN payload -> 'changes' ELSE '[]' END) c
          WHERE c ->> 'field' = 'dailyBudgetMicros' AND jsonb_typeof(c -> 'newValue') = 'number'
            AND jsonb_typeof(c -> 'oldValue') = 'number'
          LIMIT 1), 0)
        ELSE 0
      END;
    END $function$
