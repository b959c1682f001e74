"""Evidence records of finished runs: a local SQLite store, capture from the cluster, tar.gz bundles and their verification."""
