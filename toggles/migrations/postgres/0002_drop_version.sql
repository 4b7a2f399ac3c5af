-- toggles 0002: the cache's version counter is now the store's named
-- counter "toggles" (store_versions); the area's own counter table goes.
DROP TABLE feature_toggles_version;
