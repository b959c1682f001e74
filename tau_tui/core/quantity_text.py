"""A quota or usage amount as people read it: memory in Ti/Gi/Mi, counts as whole numbers."""

from __future__ import annotations


def human_quantity(value: float, resource: str) -> str:
    if resource == "memory":
        for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
            if value >= size:
                return f"{value / size:.0f}{unit}"
        return f"{value:.0f}"
    if value == int(value):
        return str(int(value))
    return f"{value:.1f}"
