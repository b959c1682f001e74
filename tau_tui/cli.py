"""`tau-tui` entry point: the headless commands, or the Textual app when no command is given.

Exit codes: 0 success, 2 invalid input (messages on stderr), 1 cluster/runtime failure, 7 a Kueue
too old to serve kueue.x-k8s.io/v1beta2; Ctrl-C 130.
The commands themselves live in `tau_tui/commands/` (`commands.registry.HANDLERS` names them).
"""

from __future__ import annotations

import sys
import threading

from .commands.app_command import run_app
from .commands.parser import (
    COMMANDS,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_UNSUPPORTED_KUEUE,
    INTERRUPTED,
    build_parser,
)
from .core.exit_signals import install_exit_on_signals
from .startup.leaving import leave_now

#: The hidden command the completion scripts ask for names (tau_tui/commands/completion_names.py).
COMPLETE_NAMES = "__complete"


def run_command(argv: list[str]) -> int:
    # Imported here: the app never loads the headless commands (start to the first frame).
    from .commands.registry import HANDLERS
    from .core.cluster.errors import ClusterError
    from .core.cluster.kueue_api_support import UnsupportedKueueApi
    from .core.operations.multikueue_steps.access import AccessError
    from .core.operations.multikueue_steps.credentials import CredentialError
    from .core.runconfig.diagnostics import DiagnosticError, escape_control, report_lines
    from .core.runconfig.profiles import ProfileReadError

    operation_errors = (AccessError, CredentialError)
    args = build_parser().parse_args(argv)
    if args.command is None:
        build_parser().print_help()
        return EXIT_OK
    try:
        return HANDLERS[args.command](args)
    except DiagnosticError as err:
        # Bounded: at most MAX_MESSAGES, each escaped and clipped (diagnostics.report_lines).
        for line in report_lines(err.diagnostics):
            print(line, file=sys.stderr)
        return EXIT_INVALID
    except UnsupportedKueueApi as err:
        print(f"tau-tui: {err.message}", file=sys.stderr)
        return EXIT_UNSUPPORTED_KUEUE
    except ClusterError as err:
        print(f"tau-tui: {err.message}", file=sys.stderr)
        return EXIT_FAILED
    except ProfileReadError as err:
        print(f"tau-tui: {err}", file=sys.stderr)
        return EXIT_FAILED
    except operation_errors as err:
        print(f"tau-tui: {err.message}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return _interrupted()
    except OSError as err:  # the audit log or an output file could not be written
        print(f"tau-tui: {err.filename or ''}: {err.strerror or err}".replace(": : ", ": "), file=sys.stderr)
        return EXIT_FAILED
    except Exception as err:  # the last line of defence: a message, never a traceback
        print(escape_control(f"tau-tui: unexpected error: {type(err).__name__}: {str(err)[:500]}"), file=sys.stderr)
        return EXIT_FAILED



#: How long the main thread waits on a headless command at a time before it looks for a Ctrl-C.
COMMAND_WAIT_SLICE_S = 0.2


def run_command_interruptibly(argv: list[str]) -> int:
    """:func:`run_command` in a worker thread while the main thread waits in short slices.

    Python handles a Ctrl-C on the main thread only, when it runs Python code or a blocking call
    of it is interrupted.  Run on the main thread, a command blocked in a socket read missed it when
    the signal went to another of the process's threads or landed just before the read began (seen
    under load, once even after a second Ctrl-C: the loaded suite of stop 20).  Waiting
    in slices, the main thread sees it within one.  What the command raises (``SystemExit`` from
    ``--help`` or a bad flag) is raised here, on the main thread."""
    outcome: list[int | BaseException] = []

    def command() -> None:
        try:
            outcome.append(run_command(argv))
        except BaseException as err:  # noqa: BLE001  (handed to the main thread as it came)
            outcome.append(err)

    worker = threading.Thread(target=command, name="tau-tui-command", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(COMMAND_WAIT_SLICE_S)
    except KeyboardInterrupt:
        leave_now(_interrupted())
    except SystemExit as stop:  # SIGTERM/SIGHUP (install_exit_on_signals)
        leave_now(stop.code if isinstance(stop.code, int) else EXIT_FAILED)
    if not outcome:
        return EXIT_FAILED
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _interrupted() -> int:
    print(INTERRUPTED, file=sys.stderr)
    return EXIT_INTERRUPTED


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        install_exit_on_signals()  # SIGTERM/SIGHUP run the exit clean-up (spools, private files)
        if argv == ["--version"]:  # before any parser: it loads nothing of the app
            from .version import version_line

            print(version_line())
            return EXIT_OK
        if argv[:1] == [COMPLETE_NAMES]:  # the completion scripts' hidden helper
            from .commands.completion_names import complete_names

            return complete_names(argv[1:])
        if not argv or argv[0] not in COMMANDS:
            # No sub-command (or only app flags such as --demo): the interactive app.
            return run_app(argv)
        return run_command_interruptibly(argv)
    except KeyboardInterrupt:  # Ctrl-C anywhere, imports included: one line, no traceback
        return _interrupted()


if __name__ == "__main__":
    sys.exit(main())
