-- Which recv (step id) consumed a message.
ALTER TABLE notifications ADD COLUMN consumed_by_function_id INTEGER;
