-- API keys of `hookline serve` (issue 48, docs/serve.md "Auth"): one row per key, never the key
-- itself, only its SHA-256 (lowercase hex). Every node reads the table at most a second apart,
-- so a revoked or expired key is refused everywhere within 2 s.
CREATE TABLE hookline_api_keys (
    id          text    PRIMARY KEY,
    name        text,
    tenant      text    NOT NULL,
    role        text    NOT NULL CHECK (role IN ('client', 'operator', 'admin')),
    sha256      text    NOT NULL,
    created_ms  bigint  NOT NULL,
    expires_ms  bigint,
    revoked_ms  bigint
);
