-- rules 0012: nothing on SQLite. PostgreSQL indexes the live rules' ids for
-- the joins from a set's members to their rules, which it could otherwise
-- read in id order through every deleted rule; SQLite's planner reaches
-- each member's rule by its primary key.
SELECT 1;
