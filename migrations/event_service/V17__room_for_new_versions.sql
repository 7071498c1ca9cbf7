-- Every seat transaction writes new counts into the rows of the ticket types it sells, and every
-- node renews its shard leases every few seconds. A new version stays on its row's page (a HOT
-- update: no index entry, and the dead versions are pruned on the page) only while that page
-- has room; packed full, half of a 64-event on-sale's updates of ticket_types left their page,
-- and 64 rows grew to 1.6 MB with two index entries for each version, which every lookup of a
-- ticket type then walked through (bench/README.md). Their rows are rewritten all the time and
-- read by key, never in bulk: their pages keep most of their room for the next versions (the
-- leases stay 256 rows; the ticket types take about five times the pages, past events' too).
-- (Pages written before this keep their old packing until their rows move on.)
ALTER TABLE event_service.ticket_types SET (fillfactor = 20);
ALTER TABLE event_service.shard_leases SET (fillfactor = 20);
