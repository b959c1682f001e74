"""Make the screenshots of the user guides (docs/guide/images/*.svg) by walking each guide.

Each picture is the screen after one step of the guide's own walk: the keys its Markdown gives,
pressed on `tau-tui --demo` (or `--demo faults`, as the guide says) with Textual's pilot on a frozen
clock, so the pictures match what the guide tells the reader and come out the same on every run.
The walk is the one tests/docs/test_guide_walks.py checks (tests/docs/guide_walk.py reads it from
the guide); a picture no step makes is removed.

    .venv/bin/python scripts/guide_screenshots.py            # all three guides
    .venv/bin/python scripts/guide_screenshots.py on-call    # one guide
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.docs.guide_walk import IMAGES, parse_guide, walk_guide  # noqa: E402

GUIDES = ("researcher", "platform-owner", "on-call")


def main(argv: list[str]) -> int:
    import keyring
    from keyring.backends.fail import Keyring as NoKeyring

    keyring.set_keyring(NoKeyring())  # as on a machine without an OS keyring: the demo needs none
    names = argv or list(GUIDES)
    IMAGES.mkdir(parents=True, exist_ok=True)
    for name in names:
        shots = {step.shot for session in parse_guide(f"{name}.md") for step in session.steps if step.shot}
        for old in IMAGES.glob(f"{name}-*.svg"):
            if old.stem not in shots:
                old.unlink()
                print(f"removed {old.relative_to(ROOT)} (no step of the guide makes it)")
        with tempfile.TemporaryDirectory(prefix=f"guide-{name}-") as tmp_dir:
            tmp = Path(tmp_dir)
            os.environ.update(XDG_STATE_HOME=str(tmp / "state"), XDG_CONFIG_HOME=str(tmp / "config"),
                              XDG_DATA_HOME=str(tmp / "data"))
            os.environ.pop("TAU_TUI_CONFIG", None)
            asyncio.run(walk_guide(f"{name}.md", tmp, save_dir=IMAGES))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
