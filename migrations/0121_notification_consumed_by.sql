-- Record which recv step consumed a message, so rewinding a workflow past that step can make
-- the message unconsumed again.

ALTER TABLE {{schema}}.notifications ADD COLUMN IF NOT EXISTS consumed_by_function_id INT4;
