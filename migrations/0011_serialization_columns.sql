-- Name the serialization format of every stored payload (NULL = the writer's legacy default),
-- so different SDKs and custom serializers can tell which payloads they can read.

ALTER TABLE {{schema}}.workflow_status ADD COLUMN serialization TEXT DEFAULT NULL;
ALTER TABLE {{schema}}.notifications ADD COLUMN serialization TEXT DEFAULT NULL;
ALTER TABLE {{schema}}.workflow_events ADD COLUMN serialization TEXT DEFAULT NULL;
ALTER TABLE {{schema}}.workflow_events_history ADD COLUMN serialization TEXT DEFAULT NULL;
ALTER TABLE {{schema}}.operation_outputs ADD COLUMN serialization TEXT DEFAULT NULL;
ALTER TABLE {{schema}}.streams ADD COLUMN serialization TEXT DEFAULT NULL;
