"""Running SPMD programs on devices: shard threads, rendezvous, collectives between shards."""
