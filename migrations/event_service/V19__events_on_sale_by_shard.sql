-- Every events node counts the events on sale in each shard at every cluster round (a few
-- times a second) to share the shards out by load (domain::cluster::placement). Past events
-- outnumber those on sale by far once an installation has run a while: this index holds only
-- the published ones, so the count reads them alone, from the index.
CREATE INDEX events_on_sale_by_shard ON event_service.events (shard)
    WHERE status = 'PUBLISHED' AND deleted_at IS NULL;
