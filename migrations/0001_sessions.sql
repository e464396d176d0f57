-- hookline's PostgreSQL store (postgres/src/lib.rs): sessions with their leases, records and archive.
-- Applied by `hookline store migrate --database-url URL`, recorded in hookline_migrations.

-- One row per session: its facts (SessionInfo as JSON text) and its lease. A writer holds the lease
-- while lease_holder is set and lease_expires is in the future; lease_token is the fencing token,
-- raised by one on every takeover. Every write checks the token in its own transaction.
CREATE TABLE hookline_sessions (
    id            text        PRIMARY KEY,
    info          text        NOT NULL,
    lease_holder  text,
    lease_token   bigint      NOT NULL DEFAULT 0,
    lease_expires timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- The stored records, in order (seq from 0; compaction replaces them all). The body is the record's
-- JSON as serde_json wrote it (text, not jsonb, so it reads back byte for byte).
CREATE TABLE hookline_records (
    session_id text   NOT NULL REFERENCES hookline_sessions (id) ON DELETE CASCADE,
    seq        bigint NOT NULL,
    body       text   NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- The append-only archive, in order.
CREATE TABLE hookline_archive (
    session_id text   NOT NULL REFERENCES hookline_sessions (id) ON DELETE CASCADE,
    seq        bigint NOT NULL,
    body       text   NOT NULL,
    PRIMARY KEY (session_id, seq)
);
