"""tau-agent: the node agent that reads NVML and reports GPU health to Kubernetes."""

__version__ = "0.1.0"
