-- attachments 0001: storage partitions, attachments, their tags and
-- links, and each tenant's stored bytes.
CREATE TABLE attachment_partitions (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    code TEXT NOT NULL,
    title TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    is_public BOOLEAN NOT NULL,
    requires_ocr BOOLEAN NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    UNIQUE (tenant_id, code)
);

CREATE TABLE attachments (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    organization_id TEXT,
    entity_id TEXT NOT NULL,
    record_id TEXT NOT NULL,
    partition_code TEXT NOT NULL,
    file_name TEXT NOT NULL,
    file_size INTEGER NOT NULL,
    mime_type TEXT NOT NULL,
    storage_key TEXT NOT NULL,
    content TEXT,
    tags TEXT NOT NULL,
    assignments TEXT NOT NULL,
    custom_fields TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    -- A partition with attachments cannot be removed (the delete fails).
    FOREIGN KEY (tenant_id, partition_code) REFERENCES attachment_partitions (tenant_id, code)
);
CREATE INDEX attachments_library_idx ON attachments (tenant_id, created_at, id);
CREATE INDEX attachments_partition_idx ON attachments (tenant_id, partition_code);

-- attachment_links index assignments: a record's attachments are those
-- with a link {type: entity id, id: record id}.
CREATE TABLE attachment_links (
    attachment_id TEXT NOT NULL REFERENCES attachments (id) ON DELETE CASCADE,
    tenant_id TEXT NOT NULL,
    type TEXT NOT NULL,
    target_id TEXT NOT NULL,
    PRIMARY KEY (attachment_id, type, target_id)
);
CREATE INDEX attachment_links_target_idx ON attachment_links (tenant_id, type, target_id);

CREATE TABLE attachment_tags (
    attachment_id TEXT NOT NULL REFERENCES attachments (id) ON DELETE CASCADE,
    tenant_id TEXT NOT NULL,
    tag TEXT NOT NULL,
    PRIMARY KEY (attachment_id, tag)
);
CREATE INDEX attachment_tags_tag_idx ON attachment_tags (tenant_id, tag);

-- attachment_usage keeps the sum of each tenant's file sizes, changed in
-- the transaction of every insert and delete, so the quota check is one
-- conditional update.
CREATE TABLE attachment_usage (
    tenant_id TEXT PRIMARY KEY,
    bytes INTEGER NOT NULL
);
