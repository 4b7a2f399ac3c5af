-- auth 0002: when a user last signed in, and the session tokens ended by
-- logout before their expiry (by token id; a row is needed only until the
-- token would have expired anyway).
ALTER TABLE auth_users ADD COLUMN last_login_at TIMESTAMPTZ;

CREATE TABLE auth_revoked_sessions (
    token_id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX auth_revoked_sessions_expiry_idx ON auth_revoked_sessions (expires_at);
