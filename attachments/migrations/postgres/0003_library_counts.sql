-- attachments 0003: the library's totals, available tags and pages
-- without reading every attachment.
--
-- How many attachments each tenant has per organization ('' for none)
-- and partition, and how many of them carry each tag, written by every
-- insert, tag change and delete in its own transaction (store.Counts: a
-- key's count is the sum of its slots' rows). The total of the library,
-- unfiltered or filtered by partition and/or one tag, is a sum of a few
-- of them, and the tags to filter by are those whose count is not zero.
CREATE TABLE attachment_counts (
    tenant_id TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    partition_code TEXT NOT NULL,
    slot INTEGER NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, organization_id, partition_code, slot)
);
CREATE TABLE attachment_tag_counts (
    tenant_id TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    partition_code TEXT NOT NULL,
    tag TEXT NOT NULL,
    slot INTEGER NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, organization_id, partition_code, tag, slot)
);
CREATE INDEX attachment_tag_counts_tag_idx ON attachment_tag_counts (tenant_id, tag, organization_id, n);
-- The counts of the attachments stored before this migration.
INSERT INTO attachment_counts (tenant_id, organization_id, partition_code, slot, n)
    SELECT tenant_id, COALESCE(organization_id, ''), partition_code, 0, count(*) FROM attachments
    GROUP BY tenant_id, COALESCE(organization_id, ''), partition_code;
INSERT INTO attachment_tag_counts (tenant_id, organization_id, partition_code, tag, slot, n)
    SELECT a.tenant_id, COALESCE(a.organization_id, ''), a.partition_code, t.tag, 0, count(*)
    FROM attachment_tags t JOIN attachments a ON a.id = t.attachment_id
    GROUP BY a.tenant_id, COALESCE(a.organization_id, ''), a.partition_code, t.tag;
-- The library's pages in each order (newest first by default; file
-- name; file size) and a partition's newest first, each read from its
-- index in order rather than sorted.
DROP INDEX attachments_partition_idx;
CREATE INDEX attachments_partition_idx ON attachments (tenant_id, partition_code, created_at, id);
CREATE INDEX attachments_name_idx ON attachments (tenant_id, file_name, id);
CREATE INDEX attachments_size_idx ON attachments (tenant_id, file_size, id);
