-- attachments_blobs 0001: SQLBlobs, file bytes kept in the database.
-- attachment_blobs names each stored key's current version; its bytes are
-- the rows of attachment_blob_chunks with that blob_id, in seq order, each
-- at most 1 MiB. A Put writes a new version's chunks first and swaps the
-- key's row in one short transaction; chunks no row names are a failed or
-- crashed Put's, removed by the orphan sweep's listing after an hour.
CREATE TABLE attachment_blobs (
    blob_key TEXT PRIMARY KEY,
    blob_id TEXT NOT NULL,
    size BIGINT NOT NULL,
    -- microseconds since 1970 (UTC)
    mod_time BIGINT NOT NULL
);

CREATE TABLE attachment_blob_chunks (
    -- a UUIDv7: its time is when the Put started
    blob_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (blob_id, seq)
);
