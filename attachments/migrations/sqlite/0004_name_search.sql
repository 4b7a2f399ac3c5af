-- attachments 0004: an index for the library's file-name search.
--
-- The search matches its term anywhere in the name, case-folded
-- (tk_fold, the store's Unicode lower-casing), which no B-tree serves:
-- a rare term read every name of the tenant. attachment_names holds
-- each attachment's folded name in an FTS5 index of its trigrams
-- (contentless: the index only; case_sensitive 1, as the name is folded
-- already), under a key of the attachment's own: attachment_name_keys
-- gives each attachment id an INTEGER PRIMARY KEY, which VACUUM, a dump
-- and restore or a rebuild of the table keep, where the attachments
-- table's rowid (its primary key is TEXT) may be renumbered. The
-- triggers below keep both in the transaction of every insert, rename
-- and delete. A term of three characters or more is looked up there
-- first for the keys whose folded name holds it, read back to the
-- attachments by id; the search's own predicate still decides.
CREATE TABLE attachment_name_keys (
    name_key INTEGER PRIMARY KEY,
    attachment_id TEXT NOT NULL UNIQUE
);
CREATE VIRTUAL TABLE attachment_names USING fts5(name, content='', contentless_delete=1,
    tokenize='trigram case_sensitive 1');
INSERT INTO attachment_name_keys (attachment_id) SELECT id FROM attachments;
INSERT INTO attachment_names (rowid, name)
    SELECT k.name_key, tk_fold(a.file_name) FROM attachment_name_keys k JOIN attachments a ON a.id = k.attachment_id;
CREATE TRIGGER attachment_names_insert AFTER INSERT ON attachments BEGIN
    INSERT INTO attachment_name_keys (attachment_id) VALUES (new.id);
    INSERT INTO attachment_names (rowid, name)
        SELECT name_key, tk_fold(new.file_name) FROM attachment_name_keys WHERE attachment_id = new.id;
END;
CREATE TRIGGER attachment_names_rename AFTER UPDATE OF file_name ON attachments
    WHEN old.file_name IS NOT new.file_name BEGIN
    DELETE FROM attachment_names WHERE rowid = (SELECT name_key FROM attachment_name_keys WHERE attachment_id = old.id);
    INSERT INTO attachment_names (rowid, name)
        SELECT name_key, tk_fold(new.file_name) FROM attachment_name_keys WHERE attachment_id = new.id;
END;
CREATE TRIGGER attachment_names_delete AFTER DELETE ON attachments BEGIN
    DELETE FROM attachment_names WHERE rowid = (SELECT name_key FROM attachment_name_keys WHERE attachment_id = old.id);
    DELETE FROM attachment_name_keys WHERE attachment_id = old.id;
END;
