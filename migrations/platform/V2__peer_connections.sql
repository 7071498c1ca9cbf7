-- The most connections each process may open to PostgreSQL (its pool and its own sessions):
-- readiness and `bilet cluster status` warn when the live processes together could exceed
-- what the server (or the application role's connection limit) allows.
ALTER TABLE platform.peers ADD COLUMN connections INTEGER NOT NULL DEFAULT 0;
