-- Idempotency keys stored with their session (issue 22 item 3, postgres/src/keys.rs): a request
-- sent with an Idempotency-Key header claims its key here before it runs, and stores its answer
-- here when it ends, so the same request sent again (to this node or one that resumed the
-- session) is answered from this row instead of running twice.
--
-- While the request runs, owner names it (a process and a request counter) and status and body
-- are NULL; once it ended, owner is NULL and status and body hold the answer (its HTTP status and
-- JSON text). created_ms is the claim's time in milliseconds since the Unix epoch, as the serving
-- node's clock read it: rows expire --idempotency-ttl after it, and the oldest finished rows of a
-- session past its bound are deleted by the next claim.
CREATE TABLE hookline_idempotency_keys (
    session_id text    NOT NULL REFERENCES hookline_sessions (id) ON DELETE CASCADE,
    key        text    NOT NULL,
    digest     text    NOT NULL,
    created_ms bigint  NOT NULL,
    owner      text,
    status     integer,
    body       text,
    PRIMARY KEY (session_id, key)
);

CREATE INDEX hookline_idempotency_keys_age ON hookline_idempotency_keys (session_id, created_ms);
