"""Where the app's data comes from: start the embedded demo cluster or connect
to the kubeconfig's cluster (:mod:`~tau_tui.startup.backends`)."""
