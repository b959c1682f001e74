"""Local Kubernetes control plane for integration tests (etcd, kube-apiserver, Kueue, KWOK).

Binaries come from harness/build.sh; see docs/testing.md for the tiers and fixtures.
"""
