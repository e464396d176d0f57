-- Node liveness (issue 40 item 1, postgres/src/liveness.rs): a session whose holder is known dead
-- is taken over at once, not when its lease expires.
--
-- Each running store (a node's process, from connect to drop) has an incarnation: the node's name
-- and a random suffix. It holds a session-level advisory lock on hookline_node_key(incarnation) on
-- a connection of its own for as long as it runs; PostgreSQL releases that lock the moment the
-- connection ends, as it does when the process dies. A lease records the incarnation that took it
-- (lease_incarnation), so a takeover can ask hookline_node_alive whether its holder still runs.
-- A holder that runs but is silent (stopped, cut off from the nodes but not from the database)
-- still holds its lock: its sessions wait for the lease to expire. The fencing token stays the
-- guarantee that no two nodes write one session.
ALTER TABLE hookline_sessions ADD COLUMN lease_incarnation text;

-- The advisory lock key of an incarnation (a 64-bit hash, seeded apart from other users' keys).
CREATE FUNCTION hookline_node_key(incarnation text) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT hashtextextended(incarnation, 7526676607819408741) $$;

-- Whether the incarnation's lock is held now, by any connection to this database.
CREATE FUNCTION hookline_node_alive(incarnation text) RETURNS boolean
    LANGUAGE sql STABLE STRICT
    AS $$
    SELECT EXISTS (
        SELECT 1 FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND objsubid = 1
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND classid::bigint = (hookline_node_key(incarnation) >> 32) & 4294967295
          AND objid::bigint = hookline_node_key(incarnation) & 4294967295)
    $$;
