-- Mark received messages as consumed instead of deleting them, so fork/rewind can replay
-- them. The index duplicates idx_workflow_topic and is dropped again by migration 114.

ALTER TABLE {{schema}}.notifications ADD COLUMN consumed BOOLEAN NOT NULL DEFAULT FALSE;

CREATE INDEX idx_notifications ON {{schema}}.notifications (destination_uuid, topic);
