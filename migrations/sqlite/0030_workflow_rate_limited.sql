-- Whether a dispatch counts against its queue's rate limiter.
ALTER TABLE "workflow_status" ADD COLUMN "rate_limited" BOOLEAN NOT NULL DEFAULT FALSE;
