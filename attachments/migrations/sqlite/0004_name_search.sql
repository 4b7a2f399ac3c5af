-- attachments 0004: an index for the library's file-name search.
--
-- The search matches its term anywhere in the name, case-folded
-- (tk_fold, the store's Unicode lower-casing), which no B-tree serves:
-- a rare term read every name of the tenant. attachment_names holds
-- each attachment's folded name under the attachment's rowid in an FTS5
-- index of its trigrams (contentless: the index only; case_sensitive 1,
-- as the name is folded already), kept by the triggers below in the
-- transaction of every insert, rename and delete. A term of three
-- characters or more is looked up there first for the rowids whose
-- folded name holds it; the search's own predicate still decides.
CREATE VIRTUAL TABLE attachment_names USING fts5(name, content='', contentless_delete=1,
    tokenize='trigram case_sensitive 1');
INSERT INTO attachment_names (rowid, name) SELECT rowid, tk_fold(file_name) FROM attachments;
CREATE TRIGGER attachment_names_insert AFTER INSERT ON attachments BEGIN
    INSERT INTO attachment_names (rowid, name) VALUES (new.rowid, tk_fold(new.file_name));
END;
CREATE TRIGGER attachment_names_rename AFTER UPDATE OF file_name ON attachments
    WHEN old.file_name IS NOT new.file_name BEGIN
    DELETE FROM attachment_names WHERE rowid = old.rowid;
    INSERT INTO attachment_names (rowid, name) VALUES (new.rowid, tk_fold(new.file_name));
END;
CREATE TRIGGER attachment_names_delete AFTER DELETE ON attachments BEGIN
    DELETE FROM attachment_names WHERE rowid = old.rowid;
END;
