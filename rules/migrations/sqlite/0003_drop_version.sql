-- rules 0003: the definitions version counter is the store's named counter
-- "rules.definitions" (store_versions), which the plan caches read through
-- internal/vcache; the area's own counter table goes.
DROP TABLE business_rules_version;
