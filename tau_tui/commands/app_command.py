"""The interactive app's own options, and starting it."""

from __future__ import annotations

import argparse
import sys
import traceback

from tau_tui.startup.leaving import leave_if_threads_linger, leave_now

from .parser import DESCRIPTION, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_INVALID, INTERRUPTED, add_session_recording_options


def build_app_parser() -> argparse.ArgumentParser:
    # Imported here: the headless commands never load Textual.
    from ..widgets.header_bar import PANES

    parser = argparse.ArgumentParser(
        prog="tau-tui",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="app keys: : command mode, / filter, ? help, esc back, 1-7 panes, ctrl+p palette, ctrl+q or ctrl+c quit",
    )
    parser.add_argument("--context", help="kubeconfig context (default: current)")
    parser.add_argument("-n", "--namespace",
                        help="namespace scope (default: the kubeconfig context's namespace, else all namespaces)")
    parser.add_argument("-A", "--all-namespaces", action="store_true",
                        help="every namespace, even when the kubeconfig context names one (:ns all in the app)")
    parser.add_argument("--readonly", action="store_true", help="hide and refuse every mutating action")
    parser.add_argument("--demo", nargs="?", const="demo", metavar="SCENARIO",
                        help="use the embedded simulated cluster (scenario: demo, faults, large, xl)")
    parser.add_argument("--theme", help="tau-dark, tau-light or tau-high-contrast (or a theme file's name)")
    parser.add_argument("--pane", choices=[m for _, m, _ in PANES], help="pane to open first (default: queue)")
    parser.add_argument("--file", help="tau.yaml to open in the compose pane")
    parser.add_argument("--request-timeout", metavar="DURATION",
                        help="how long an API request may wait for an answer (30s, 1m, 0 = no limit; "
                             "default: request_timeout in config.yaml, else 30s)")
    add_session_recording_options(parser)
    parser.add_argument("--version", action=_PrintVersion, help="print the version and the commit it was built from")
    return parser


class _PrintVersion(argparse.Action):
    """``--version``, read only when asked (it may run git)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=kwargs.get("help"))

    def __call__(self, parser, namespace, values, option_string=None):
        from ..version import version_line

        print(version_line())
        parser.exit()


def check_session_files(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str | None:
    """Why ``--record``/``--replay`` cannot work, before the app starts (one line), or None."""
    if args.replay:
        if args.record or args.demo or args.context:
            parser.error("--replay plays a recording: it cannot be combined with --record, --demo or --context")
        from ..core.operations.recording.format import RecordingError
        from ..core.operations.recording.reader import RecordingReader

        try:
            RecordingReader(args.replay)
        except RecordingError as err:
            return err.message
    if args.record and args.readonly and not args.record_while_readonly:
        return (f"--readonly writes nothing outside the app's state directory, so it does not record into {args.record}; "
                "add --record-while-readonly to record this read-only session")
    if args.record:
        from pathlib import Path

        target = Path(args.record)
        if target.exists():
            return f"cannot record into {target}: it already exists; choose another file name (a recording is never overwritten)"
        if not target.parent.is_dir():
            return f"cannot record into {target}: directory {target.parent} does not exist; create it or choose another path"
    return None


def run_app(argv: list[str]) -> int:
    """The exit code when the app cannot start; once it ran, the process ends here."""
    parser = build_app_parser()
    args = parser.parse_args(argv)
    timeouts = None
    if args.request_timeout is not None:
        from ..core.cluster.kubeconfig import RequestTimeouts, parse_duration

        try:
            timeouts = RequestTimeouts.from_read(parse_duration(args.request_timeout))
        except ValueError as err:
            parser.error(f"--request-timeout: {err}")
    try:  # spools of earlier runs that were killed before they could remove them
        from ..core.cluster.logspool.spool_dirs import clean_stale_spools
        from ..core.operations.audit import state_dir

        clean_stale_spools(state_dir() / "spool")
    except OSError:
        pass
    problem = check_session_files(args, parser)
    if problem is not None:
        print(f"tau-tui: {problem}", file=sys.stderr)
        return EXIT_INVALID
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        print("tau-tui: the app needs a terminal; use a sub-command (tau-tui --help) for scripts", file=sys.stderr)
        return 2
    from ..app import TauApp
    from ..startup.escape_key import answer_escape_promptly
    from ..startup.heap import tune_collector

    tune_collector()
    answer_escape_promptly()
    app = TauApp(
        demo=args.demo,
        context=args.context,
        namespace=args.namespace,
        readonly=args.readonly,
        theme=args.theme,
        start_pane=args.pane,
        compose_file=args.file,
        request_timeouts=timeouts,
        record=args.record,
        record_while_readonly=args.record_while_readonly,
        replay=args.replay,
        all_namespaces=args.all_namespaces,
    )
    from ..startup.app_loop import run_on_app_loop

    code = EXIT_FAILED
    try:
        # SIGINT, SIGTERM and SIGHUP quit the app as ctrl+q does (app.quit_on_signal); its workers'
        # threads are daemons that a quit does not wait for.
        run_on_app_loop(app.run_async(), app.quit_on_signal)
        for line in app.unsaved_guard.farewell():  # the terminal is restored: say where the drafts are
            print(line, file=sys.stderr)
        code = 0 if app.return_code in (None, 0) else int(app.return_code)
    except KeyboardInterrupt:  # a Ctrl-C outside the app's loop, or a second one while it quits
        print(INTERRUPTED, file=sys.stderr)
        leave_now(EXIT_INTERRUPTED)
    except SystemExit as stop:  # a second SIGTERM/SIGHUP while it quits (install_exit_on_signals)
        code = stop.code if isinstance(stop.code, int) else EXIT_FAILED
        leave_if_threads_linger(code)
        raise
    except BaseException:
        leave_if_threads_linger(code, what_ended_it=traceback.format_exc())
        raise
    if code == EXIT_INTERRUPTED:
        print(INTERRUPTED, file=sys.stderr)
    leave_if_threads_linger(code)
    # The exit clean-up runs, then the process ends without the interpreter's teardown: its garbage
    # collection walks the whole cached cluster (seconds with a large one), the terminal already restored.
    leave_now(code)
