"""The metric names a PromQL expression reads, found without a PromQL parser: strings, label
matchers, ranges and grouping label lists are taken out; what is left that is not a function (a
name followed by a parenthesis), an operator keyword or part of a number or duration is a metric.
Grafana's variables are put in as values first."""

from __future__ import annotations

import re

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset",
            "inf", "nan"}
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__range": "1h", "$__interval": "1m", "$node": ".*"}


def fill_grafana_variables(expr: str) -> str:
    for name, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(name, value)
    return expr


def metric_names(expr: str) -> set[str]:
    text = fill_grafana_variables(expr)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        before = text[match.start() - 1] if match.start() else " "
        if before.isdigit() or before == ".":
            continue  # 15m, 1e3
        if text[match.end():].lstrip().startswith("(") or match.group(0).lower() in KEYWORDS:
            continue
        names.add(match.group(0))
    return names
