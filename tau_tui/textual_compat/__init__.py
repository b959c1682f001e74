"""Every private Textual name the app uses, in one place (written against Textual 8.2.8).

Each hook says why the public API does not do its job.  ``tests/textual_compat/test_canary.py``
checks that each name still exists and behaves as assumed, so a Textual upgrade fails there;
``tests/textual_compat/test_private_names_confined.py`` checks that no module outside this package
reaches a private Textual name.

- ``app``: repaint holds around a mode switch, screens mounted ahead of their first switch;
- ``screen``: the frame pacer, the screen update timer, frame callbacks, laying out a screen not shown;
- ``footer``: the footer's key widget and its "bindings read" flag;
- ``table``: scrollbars sized without a screen layout;
- ``probes``: what only the tests observe (mounts, frames, layouts), changing nothing Textual does.
"""
