-- entities 0005: the definitions' version counter moved to store_versions
-- (counter "entities.definitions").
DROP TABLE custom_field_version;
