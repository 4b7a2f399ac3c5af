-- attachments 0002: the outcome of an attachment's text extraction, so
-- that one that failed shows: extraction_status is NULL until the job has
-- run, then 'done', 'retrying' (an attempt failed, another follows) or
-- 'failed' (no attempt left, or the file was refused); extraction_error
-- says why for the last two.
ALTER TABLE attachments ADD COLUMN extraction_status TEXT;
ALTER TABLE attachments ADD COLUMN extraction_error TEXT;
