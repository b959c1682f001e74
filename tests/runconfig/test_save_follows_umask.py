"""A tau.yaml saved from compose follows the umask when it is new (as any editor's file would),
keeps its mode when it is replaced, and leaves no temporary file."""

from __future__ import annotations

import os
import stat

import pytest

from tau_tui.core.runconfig.document import ComposeDocument


@pytest.mark.parametrize(("umask", "expected"), [(0o077, 0o600), (0o022, 0o644), (0o027, 0o640)])
def test_a_new_tau_yaml_gets_the_umask_mode(tmp_path, umask, expected):
    old = os.umask(umask)
    try:
        written = ComposeDocument.new().save(tmp_path / "tau.yaml")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(written).st_mode) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tau.yaml"]


def test_a_replaced_tau_yaml_keeps_its_mode(tmp_path):
    path = tmp_path / "tau.yaml"
    ComposeDocument.new().save(path)
    os.chmod(path, 0o640)
    doc = ComposeDocument.open(path)
    doc.set("run.name", "another-run")
    old = os.umask(0o077)
    try:
        doc.save()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tau.yaml"]
